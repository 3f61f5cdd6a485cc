"""Device objects and the `xp` lookup (Chainer's idiom: one op code for NumPy and CuPy)."""
from __future__ import annotations

import functools
import os
import re
import sys

import numpy as np

FAKE_GPU_ENV = "MINIGRAD_FAKE_GPU"

# device types and the spellings that name them: "gpu" is minigrad's older name of "cuda"
_TYPES = {"cpu": "cpu", "cuda": "cuda", "gpu": "cuda"}
_DEVICE_STRING = re.compile(r"(?P<type>[a-z]+)(?::(?P<index>[0-9]+))?")


class device:  # noqa: N801  (lower case, like torch.device)
    """Where a tensor lives, as torch.device: `device("cpu")`, `device("cuda")`,
    `device("cuda", 0)`, `device("cuda:0")`, `device(other_device)`; an int n is
    `device("cuda", n)`. "gpu" is accepted for "cuda" ("gpu:0" too); the type reads
    "cuda". `x.device` is `device(type='cpu')` or `device(type='cuda', index=0)`.

    Two devices are equal when type and index are (`device("cuda") != device("cuda:0")`,
    as in PyTorch). Unlike PyTorch's, a device also equals a string naming it, where a
    missing index names the current GPU: `x.device == "cuda"` and `== "gpu"` hold for a
    tensor on cuda:0.
    """

    __slots__ = ("_type", "_index")

    def __init__(self, type: str | device | int, index: int | None = None):  # noqa: A002
        if isinstance(type, device):
            if index is not None:
                raise TypeError(f"device: index={index!r} given with a device ({type}), "
                                "which has its own")
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            if index is not None:
                raise TypeError(f"device: got the GPU index {type} and index={index!r}; "
                                "pass device('cuda', index)")
            type, index = "cuda", _parse_index("cuda", type)
        elif isinstance(type, str):
            type, index = _parse_string(type, index)
        else:
            raise TypeError(f"device: expected a device type string such as 'cpu' or 'cuda', "
                            f"a device or a GPU index, got {type!r} of type "
                            f"{type.__class__.__name__}")
        self._type = type
        self._index = index

    @property
    def type(self) -> str:
        """'cpu' or 'cuda'."""
        return self._type

    @property
    def index(self) -> int | None:
        """The device's index (0 for minigrad's GPU), None when it was not given."""
        return self._index

    def __eq__(self, other) -> bool:
        if isinstance(other, device):
            return self._type == other._type and self._index == other._index
        if isinstance(other, str):
            try:
                named = device(other)
            except (RuntimeError, TypeError):
                return False
            return _resolved(self) == _resolved(named)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._type, self._index))

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __reduce__(self):
        return (device, (self._type, self._index))


Device = device  # minigrad's earlier name of the class


def _parse_string(text: str, index) -> tuple[str, int | None]:
    match = _DEVICE_STRING.fullmatch(text)
    if match is None or match["type"] not in _TYPES:
        raise RuntimeError(f"unknown device {text!r}: expected 'cpu' or 'cuda' (alias "
                           "'gpu'), optionally with an index, as in 'cuda:0'")
    kind = _TYPES[match["type"]]
    if match["index"] is not None:
        if index is not None:
            raise RuntimeError(f"device: the type string {text!r} must not include an index "
                               f"when index={index!r} is passed explicitly")
        return kind, int(match["index"])
    return kind, None if index is None else _parse_index(kind, index)


def _parse_index(kind: str, index) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"device: index must be an int, got {index!r} of type "
                        f"{type(index).__name__}")
    if index < 0:
        raise RuntimeError(f"device: the index of a {kind} device must not be negative, "
                           f"got {index}")
    return index


CPU = device("cpu")
GPU = device("cuda", 0)


def _resolved(where: device) -> tuple[str, int]:
    """(type, index) with a missing index read as 0: the current device of that type."""
    return where.type, 0 if where.index is None else where.index


def as_device(value) -> device:
    """The device to put a tensor on: CPU or GPU (cuda:0), from a device, a string
    ('cpu', 'cuda', 'cuda:0', 'gpu'), a GPU index or None (the CPU).

    Asking for the GPU where CUDA is unusable raises a RuntimeError whose one-line
    message says why (CuPy missing, no driver, no device); minigrad uses one GPU, so any
    index but 0 is refused."""
    if value is None:
        return CPU
    where = value if isinstance(value, device) else device(value)
    if where.type == "cpu":
        return CPU
    if where.index not in (None, 0):
        raise RuntimeError(f"device {str(where)!r} requested, but minigrad uses one GPU, "
                           "cuda:0")
    require_cuda(value if isinstance(value, str) else str(where))
    return GPU


def fake_gpu_requested() -> bool:
    """True when MINIGRAD_FAKE_GPU asks for the CuPy stand-in (minigrad.testing.fake_cupy)
    as the "cuda" device."""
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
        print(f"minigrad: {FAKE_GPU_ENV}=1: device 'cuda' is a NumPy-backed CuPy stand-in; "
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


def require_cuda(requested: str = "cuda"):
    """The cupy module, or a RuntimeError naming the `requested` device and why the GPU is
    unusable."""
    cupy, reason = _probe_cuda()
    if cupy is None:
        raise RuntimeError(f"device {requested!r} requested but CUDA is not available here: "
                           f"{reason}")
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


def device_of(array) -> device:
    """The device an array lives on: CPU for NumPy arrays, GPU (cuda:0) for CuPy's."""
    return CPU if isinstance(array, (np.ndarray, np.generic)) else GPU


def to_device(array, where: device):
    """Copy an array to `where` (a no-op when it is already there)."""
    if where.type == "cpu":
        if isinstance(array, np.ndarray):
            return array
        if isinstance(array, np.generic):
            return np.asarray(array)
        return array.get()  # a CuPy array: copy device -> host
    return require_cuda().asarray(array)
