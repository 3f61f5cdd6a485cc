"""Dispatcher for matmul with NumPy's `@` semantics (2-D, batched with broadcast batch
dimensions, 1-D operands), choosing between the Numba kernels of
minigrad/kernels/cpu/matmul.py and the reference twin (NumPy's `@`, i.e. OpenBLAS).

The 2-D kernel and the batched "nt" kernel compute out = a @ bt.T from row-major `a` and
`bt` (dot products along k), so for them the cheap case is a `b` that is the transpose of
a contiguous array (`x @ w.T`, `q @ k.transpose(-2, -1)`): then bt is free. A batched `b`
that is contiguous goes to the "nn" kernel (register tiles of explicit SIMD vectors along
n), so neither batched form copies b.
"""

import numpy as np

from minigrad.kernels import cuda as gpu
from minigrad.kernels import reference
from minigrad.kernels.dispatch import aligned_empty, as_kernel_array, forced, numba_eligible

# 2-D products: NumPy always unless forced ("numba" mode). The kernel won only tall-skinny
# x @ w.T products, and only against a multi-threaded OpenBLAS that other processes had
# slowed down (see benchmarks/README_kernels.md).
# Batched products, twin/kernel through this dispatcher at load 0.6-1.5 (31 interleaved
# repeats, float32 then float64; (batch, m, k, n)):
#   nn: (256, 20, 20, 64) 1.12 / 1.12, (256, 16, 32, 16) 1.30 / 1.33, (256, 16, 16, 32)
#   1.16 / 1.00, (256, 20, 64, 20) 1.22 / 1.21, (64, 32, 32, 32) 1.06 / 1.09,
#   (64, 64, 64, 64) 1.05 / 0.97, (64, 16, 128, 16) 1.32 / 1.22; NumPy wins from m = n = 128
#   ((64, 128, 16, 128) 0.78 / 0.79, (16, 128, 128, 128) 0.64 / 0.48) and below about
#   2**20 multiply-adds ((64, 8, 8, 8) 0.78 / 0.80: the dispatcher's 10 us)
#   nt (dot products along k): wins only for m, n <= 20 and k >= 32, (256, 20, 64, 20) 1.10 /
#   1.49, (256, 16, 32, 16) 1.01 / 1.13, (64, 16, 128, 16) 1.25 / 1.19; loses at k = 16, 20
#   (0.46-0.94) and at m = n = 32, 64 in float32 (0.73, 0.75)
_MAX_SIDE = 64
_MIN_MACS = 2**20
_NT_MAX_SIDE = 20
_NT_MIN_K = 32
# prange collapsed on every measured shape (76 ms against 3 ms for 1024 x 128 x 512)
_PARALLEL_MACS = float("inf")


def _use_kernel(a, b) -> bool:
    if not forced() and (a.ndim < 2 or b.ndim < 3):
        return False  # auto mode keeps every non-batched product on BLAS (see above)
    if not numba_eligible(a, b):
        return False
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        return False  # the twin raises NumPy's error for these
    if a.size == 0 or b.size == 0:
        return False
    return forced() or _batched_kernel_pays(a, b)


def _batched_kernel_pays(a, b) -> bool:
    """Auto mode's rule for a batched product (the measurements above)."""
    (m, k), n = a.shape[-2:], b.shape[-1]
    macs = max(a.size // (m * k), b.size // (k * n)) * m * k * n
    if max(m, n) > _MAX_SIDE or macs < _MIN_MACS:
        return False
    if np.swapaxes(b, -1, -2).flags.c_contiguous:  # the nt kernel
        return max(m, n) <= _NT_MAX_SIDE and k >= _NT_MIN_K
    return True


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

    batch_shape = a.shape[:-2]
    if b.shape[:-2] != batch_shape:
        batch_shape = np.broadcast_shapes(batch_shape, b.shape[:-2])
    (m, k), n = a.shape[-2:], b.shape[-1]
    if a.shape[:-2] != batch_shape:
        a = np.broadcast_to(a, batch_shape + (m, k))
    if b.shape[:-2] != batch_shape:
        b = np.broadcast_to(b, batch_shape + (k, n))
    a3 = as_kernel_array(a).reshape(-1, m, k)
    # the kernels use unaligned loads, so a plain np.empty (cheaper than aligned_empty)
    out = np.empty((a3.shape[0], m, n), a.dtype)
    parallel = out.size * k >= _PARALLEL_MACS
    bt = np.swapaxes(b, -1, -2)
    if bt.flags.c_contiguous:
        # b is the transpose of a contiguous array (q @ k^T): dot products along k
        cpu.batched_gemm_nt(a3, bt.reshape(-1, n, k), out, parallel)
    else:
        cpu.batched_gemm_nn(a3, as_kernel_array(b).reshape(-1, k, n), out, parallel)
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
