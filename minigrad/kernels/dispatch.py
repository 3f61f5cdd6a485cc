"""What every kernel dispatcher shares: when an input may take a Numba CPU kernel, where
that kernel comes from, and how its arrays are prepared.

A dispatcher asks `cpu_kernels_for` for the module of Numba kernels to run; it gets one when
the mode allows it, every array it passes is a NumPy float32/float64 array of one dtype
(a kernel that reads no array, as dropout's mask, passes none), the size
reaches the kernel's measured threshold in thresholds.py, and Numba imports. Otherwise it
runs its reference twin. float16
inputs never reach a kernel or a twin as they are: `in_float32` runs the computation in
float32 and casts the results back, as PyTorch accumulates half precision in float.
"""
from __future__ import annotations

import importlib
import math
import warnings

import numpy as np

from minigrad.kernels.mode import get_mode

KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
ALIGNMENT = 64  # bytes: one cache line, the widest vector load
_loaded: dict[str, object] = {}


def forced() -> bool:
    """True in "numba" mode: use a kernel whatever the size."""
    return get_mode() == "numba"


def cpu_kernels_for(module: str, min_size: float, size: int, *arrays):
    """minigrad.kernels.cpu.<module> when its kernel should take these arrays (see the
    module docstring; `size` is compared with `min_size` in auto mode), else None."""
    mode = get_mode()
    if mode == "numpy" or size == 0 or (arrays and not _same_float_ndarrays(arrays)):
        return None
    if mode == "auto" and size < min_size:
        return None
    return cpu_kernels(module)


def _same_float_ndarrays(arrays) -> bool:
    dtype = arrays[0].dtype
    if dtype not in KERNEL_DTYPES:
        return False
    for a in arrays:  # (a loop, not all(...): dispatch runs on every tiny op too)
        if type(a) is not np.ndarray or a.dtype != dtype:
            return False
    return True


def cpu_kernels(name: str):
    """The module minigrad.kernels.cpu.<name>, imported on first use (importing it imports
    Numba), or None where Numba cannot be imported: then auto mode keeps the twins, and
    "numba" mode raises."""
    if name not in _loaded:
        try:
            _loaded[name] = importlib.import_module(f"minigrad.kernels.cpu.{name}")
        except ImportError as exc:
            if forced():
                raise RuntimeError(f"MINIGRAD_KERNELS=numba, but Numba cannot be imported: "
                                   f"{exc}") from exc
            warnings.warn(f"minigrad: Numba cannot be imported ({exc}); the kernels fall "
                          "back to their NumPy twins", RuntimeWarning, stacklevel=2)
            _loaded[name] = None
    return _loaded[name]


def in_float32(function, *args, **params):
    """function(*args, **params) computed on float32 copies of its float16 array arguments
    (positional ones; anything else passes unchanged), its array results cast back to
    float16, except the tuple positions listed in `keep_float32`."""
    keep = params.pop("keep_float32", ())
    widened = [a.astype(np.float32) if _is_half(a) else a for a in args]
    result = function(*widened, **params)
    if isinstance(result, tuple):
        return tuple(r if r is None or i in keep else r.astype(np.float16)
                     for i, r in enumerate(result))
    return result.astype(np.float16)


def any_half(*arrays) -> bool:
    """True when one of the arrays (None allowed) is float16."""
    for a in arrays:
        if a is not None and _is_half(a):
            return True
    return False


def _is_half(a) -> bool:
    return getattr(a, "dtype", None) == np.float16


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary
    (Numba kernels run 1.4-1.8x slower on arrays that are not)."""
    dtype = np.dtype(dtype)
    count = math.prod(shape)  # (np.prod of a tuple costs more than the rest together)
    raw = np.empty(count * dtype.itemsize + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return np.frombuffer(raw, dtype, count, start).reshape(shape)


def as_kernel_array(a: np.ndarray) -> np.ndarray:
    """`a` itself when it is C-contiguous, else an aligned contiguous copy."""
    if a.flags.c_contiguous:
        return a
    copy = aligned_empty(a.shape, a.dtype)
    copy[...] = a
    return copy


def rows_of(a: np.ndarray) -> np.ndarray:
    """A C-contiguous 2-D view (rows, last axis) of `a`, copying only if needed."""
    return as_kernel_array(a).reshape(-1, a.shape[-1])
