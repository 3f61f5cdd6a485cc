"""Shared dispatch rules: when an input may take the Numba path, and how it is prepared.

A dispatcher in this package asks `numba_eligible(*arrays)` first (mode allows it, every
array is a NumPy float32/float64 array of one dtype), then compares the input's size with
its own measured threshold. CuPy arrays never reach these CPU kernels: softmax and matmul
have CUDA kernels (minigrad/kernels/cuda, used in MINIGRAD_KERNELS=numba mode), the other
kernels give CuPy arrays to their twins.
"""

import numpy as np

from minigrad.kernels.mode import get_mode

# the fused row kernels (layer norm, cross-entropy), measured (float32, load 3-7): about
# even at 4096 elements (0.9-1.3x, the backward slower), 1.2-1.6x at 16384 (rows of 128
# and of 1000), 2.7x and up at 131072
FUSED_ROWS_MIN_ELEMENTS = 16384
KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_ALIGNMENT = 64  # bytes: one cache line, the widest vector load
# the element count from which the row kernels (softmax, layer norm, cross-entropy) run
# rows in parallel (prange). Never, by default: on this 2-core machine the serial softmax
# beat the parallel one at (64, 128, 1000), 11 ms against 15 ms (load 4-7, see
# benchmarks/README_kernels.md); lower it where a measurement shows prange faster
PARALLEL_ELEMENTS = float("inf")


def numba_eligible(*arrays) -> bool:
    """True when the mode allows a Numba kernel and every array is a NumPy array of one
    float dtype that the kernels are compiled for."""
    if get_mode() == "numpy":
        return False
    dtype = arrays[0].dtype
    if dtype not in KERNEL_DTYPES:
        return False
    for a in arrays:  # (a loop, not all(...): dispatch runs on every tiny op too)
        if type(a) is not np.ndarray or a.dtype != dtype:
            return False
    return True


def forced() -> bool:
    """True in "numba" mode: use a kernel whatever the size."""
    return get_mode() == "numba"


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.empty(count * dtype.itemsize + _ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % _ALIGNMENT
    return raw[start : start + count * dtype.itemsize].view(dtype).reshape(shape)


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
