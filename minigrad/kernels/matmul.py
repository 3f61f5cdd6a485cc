"""Dispatcher for matmul with NumPy's `@` semantics (2-D, batched with broadcast batch
dimensions, 1-D operands), choosing between the Numba kernels of
minigrad/kernels/cpu/matmul.py and the reference twin (NumPy's `@`, i.e. OpenBLAS).

The kernels compute out = a @ bt.T from row-major `a` and `bt`, so the cheapest case is a
`b` that is the transpose of a contiguous array (`x @ w.T`, `q @ k.transpose(-2, -1)`):
then bt is free. A batched `b` that is contiguous instead goes to the axpy-form kernel.
"""

import numpy as np

from minigrad.kernels import cuda as gpu
from minigrad.kernels import reference
from minigrad.kernels.dispatch import aligned_empty, as_kernel_array, forced, numba_eligible

# measured by benchmarks/bench_kernels.py (see benchmarks/README_kernels.md): NumPy won
# every batched shape (0.3-0.9x, one float64 row excepted) and the 2-D products of 64 and
# 512; the kernel won only tall-skinny x @ w.T products, and only against a multi-threaded
# OpenBLAS that other processes had slowed down (against one BLAS thread it won at
# (1024, 128) x (128, 128) and lost at (2560, 64) x (64, 256)). So no product takes
# the kernel unless forced ("numba" mode).
# prange collapsed on every measured shape (76 ms against 3 ms for 1024 x 128 x 512)
_PARALLEL_MACS = float("inf")


def _use_kernel(a, b) -> bool:
    if not numba_eligible(a, b):
        return False
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        return False  # the twin raises NumPy's error for these
    if a.size == 0 or b.size == 0:
        return False
    return forced()


def _transposed_rows(b: np.ndarray) -> np.ndarray:
    """b with its last two axes swapped, as a C-contiguous array (free if b is a
    transposed view of a contiguous array)."""
    return as_kernel_array(np.swapaxes(b, -1, -2))


def _matmul_2d(a, b):
    from minigrad.kernels.cpu import matmul as cpu

    a = as_kernel_array(a)
    bt = _transposed_rows(b)
    out = aligned_empty((a.shape[0], bt.shape[0]), a.dtype)
    cpu.gemm_nt(a, bt, out, a.shape[0] * a.shape[1] * bt.shape[0] >= _PARALLEL_MACS)
    return out


def _matmul_batched(a, b):
    from minigrad.kernels.cpu import matmul as cpu

    batch_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    (m, k), n = a.shape[-2:], b.shape[-1]
    a3 = as_kernel_array(np.broadcast_to(a, batch_shape + (m, k))).reshape(-1, m, k)
    out = aligned_empty((a3.shape[0], m, n), a.dtype)
    parallel = out.size * k >= _PARALLEL_MACS
    b_full = np.broadcast_to(b, batch_shape + (k, n))
    if np.swapaxes(b_full, -1, -2).flags.c_contiguous:
        bt = np.swapaxes(b_full, -1, -2).reshape(-1, n, k)
        cpu.batched_gemm_nt(a3, bt, out, parallel)
    else:
        cpu.batched_gemm_nn(a3, as_kernel_array(b_full).reshape(-1, k, n), out, parallel)
    return out.reshape(batch_shape + (m, n))


def matmul(a, b):
    """a @ b with NumPy's rules: 2-D, batched (batch dimensions broadcast), 1-D operands
    (a vector a is a row, a vector b is a column, the added axis is dropped again)."""
    if gpu.eligible(a, b):
        return gpu.matmul(a, b)
    if not _use_kernel(a, b):
        return reference.matmul(a, b)
    a2 = a[np.newaxis, :] if a.ndim == 1 else a
    b2 = b[:, np.newaxis] if b.ndim == 1 else b
    if b2.ndim == 2:
        # every row of every batch meets the same b: one 2-D product over all rows
        out = _matmul_2d(a2.reshape(-1, a2.shape[-1]), b2)
        out = out.reshape(a2.shape[:-1] + (b2.shape[1],))
    else:
        out = _matmul_batched(a2, b2)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out
