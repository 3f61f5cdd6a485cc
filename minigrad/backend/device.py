"""Device objects and the `xp` lookup (Chainer's idiom: one op code for NumPy and CuPy)."""
from __future__ import annotations

import functools

import numpy as np

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
    """Accept a Device, 'cpu', 'gpu', 'cuda' or 'cuda:0'; reject anything else clearly."""
    if isinstance(device, Device):
        return device
    if device is None:
        return CPU
    name = _ALIASES.get(str(device).lower())
    if name is None:
        raise ValueError(
            f"unknown device {device!r}: expected 'cpu' or 'gpu' (aliases 'cuda', 'cuda:0')"
        )
    if name == "gpu" and not is_cuda_available():
        raise RuntimeError(
            "device 'gpu' requested but CUDA is not available here "
            "(CuPy is not installed or no NVIDIA GPU/driver was found)"
        )
    return CPU if name == "cpu" else GPU


@functools.lru_cache(maxsize=1)
def cupy_or_none():
    """The cupy module when it imports and sees a GPU, else None (checked once)."""
    try:
        import cupy
    except Exception:
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:
        return None
    return cupy


def is_cuda_available() -> bool:
    return cupy_or_none() is not None


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
        return array if isinstance(array, np.ndarray) else array.get()
    cupy = cupy_or_none()
    if cupy is None:
        raise RuntimeError("device 'gpu' requested but CUDA is not available here")
    return cupy.asarray(array)
