"""Device objects and the `xp` lookup (Chainer's idiom: one op code for NumPy and CuPy)."""
from __future__ import annotations

import functools
import os
import sys

import numpy as np

FAKE_GPU_ENV = "MINIGRAD_FAKE_GPU"

_ALIASES = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu", "cuda:0": "gpu", "gpu:0": "gpu"}


class Device:
    """Where a tensor lives. Compares equal to its name and its aliases ('cuda' == 'gpu')."""

    __slots__ = ("type",)

    def __init__(self, name: str):
        self.type = _ALIASES[name]

    def __eq__(self, other) -> bool:
        if isinstance(other, Device):
            return self.type == other.type
        if isinstance(other, str):
            return _ALIASES.get(other) == self.type
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.type)

    def __repr__(self) -> str:
        return f"device(type='{self.type}')"

    def __str__(self) -> str:
        return self.type


CPU = Device("cpu")
GPU = Device("gpu")


def as_device(device) -> Device:
    """Accept a Device, 'cpu', 'gpu', 'cuda' or 'cuda:0'; reject anything else clearly.

    Asking for the GPU where CUDA is unusable raises a RuntimeError whose one-line
    message says why (CuPy missing, no driver, no device)."""
    if isinstance(device, Device):
        return device
    if device is None:
        return CPU
    name = _ALIASES.get(str(device).lower())
    if name is None:
        raise ValueError(
            f"unknown device {device!r}: expected 'cpu' or 'gpu' (aliases 'cuda', 'cuda:0')"
        )
    if name == "cpu":
        return CPU
    require_cuda()
    return GPU


def fake_gpu_requested() -> bool:
    """True when MINIGRAD_FAKE_GPU asks for the CuPy stand-in (minigrad.testing.fake_cupy)
    as the "gpu" device."""
    return os.environ.get(FAKE_GPU_ENV, "").strip() not in ("", "0")


@functools.lru_cache(maxsize=1)
def _probe_cuda() -> tuple:
    """(the cupy module, "") when CuPy imports and sees a GPU, else (None, why not).
    Checked once per process; importing minigrad never runs it. Under MINIGRAD_FAKE_GPU=1
    the module is the CuPy stand-in, and the first use says so on stderr."""
    if fake_gpu_requested():
        # the stand-in loads only when asked for, like CuPy itself
        from minigrad.testing import fake_cupy

        if os.environ.get("NUMBA_ENABLE_CUDASIM", "").strip() not in ("", "0"):
            # the Numba CUDA kernels then launch on stand-in arrays in the simulator
            from minigrad.testing import cuda_simulator

            cuda_simulator.install()
        print(f"minigrad: {FAKE_GPU_ENV}=1: device 'gpu' is a NumPy-backed CuPy stand-in; "
              "no GPU is used", file=sys.stderr)
        return fake_cupy, ""
    try:
        import cupy
    except ImportError:
        return None, "CuPy is not installed (pip install 'minigrad[gpu]')"
    except Exception as exc:  # a broken CUDA install fails in many ways at import
        return None, f"CuPy failed to import: {type(exc).__name__}: {exc}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, or a driver too old for this CuPy build
        return None, f"CuPy found no usable NVIDIA driver: {type(exc).__name__}: {exc}"
    if count < 1:
        return None, "CuPy found no NVIDIA GPU"
    return cupy, ""


def cupy_or_none():
    """The cupy module when it imports and sees a GPU, else None (checked once)."""
    return _probe_cuda()[0]


def is_cuda_available() -> bool:
    """True when tensors can be put on the GPU (CuPy imports and sees a device)."""
    return _probe_cuda()[0] is not None


def cuda_unavailable_reason() -> str:
    """Why the GPU cannot be used, in one line ("" when it can)."""
    return _probe_cuda()[1]


def require_cuda():
    """The cupy module, or a RuntimeError naming why the GPU is unusable."""
    cupy, reason = _probe_cuda()
    if cupy is None:
        raise RuntimeError(f"device 'gpu' requested but CUDA is not available here: {reason}")
    return cupy


def cupyx_special():
    """cupyx.scipy.special, for the special functions of GPU arrays (the stand-in's
    under MINIGRAD_FAKE_GPU=1)."""
    if fake_gpu_requested():
        from minigrad.testing import fake_cupyx  # only when the stand-in is asked for

        return fake_cupyx.scipy.special
    import cupyx.scipy.special

    return cupyx.scipy.special


def array_module(array):
    """numpy for host arrays, cupy for device arrays."""
    if array.__class__ is np.ndarray or isinstance(array, (np.ndarray, np.generic)):
        return np
    return cupy_or_none()


def device_of(array) -> Device:
    return CPU if isinstance(array, (np.ndarray, np.generic)) else GPU


def to_device(array, device: Device):
    """Copy an array to `device` (a no-op when it is already there)."""
    if device.type == "cpu":
        if isinstance(array, np.ndarray):
            return array
        if isinstance(array, np.generic):
            return np.asarray(array)
        return array.get()  # a CuPy array: copy device -> host
    return require_cuda().asarray(array)
