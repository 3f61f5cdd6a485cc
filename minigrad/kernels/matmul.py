"""Matrix products with NumPy's `@` semantics (2-D, batched with broadcast batch dims, 1-D
operands): the reference twin (NumPy's or CuPy's `@`, i.e. BLAS) and its dispatcher, which
picks the Numba kernels of kernels/cpu/matmul.py where thresholds.py says they win.

The 2-D kernel and the batched "nt" kernel compute out = a @ bt.T from row-major `a` and
`bt` (dot products along k), so for them the cheap case is a `b` that is the transpose of
a contiguous array (`x @ w.T`, `q @ k.transpose(-2, -1)`): then bt is free. A batched `b`
that is contiguous goes to the "nn" kernel (register tiles of explicit SIMD vectors along
n), so neither batched form copies b.
"""

import numpy as np

from minigrad.kernels import cuda as gpu
from minigrad.kernels.dispatch import aligned_empty, as_kernel_array, cpu_kernels_for, forced
from minigrad.kernels.thresholds import MIN_SIZE

# the batched kernels win only on small matrices: sides up to 64 (NumPy wins from
# m = n = 128), and the "nt" form only for m, n <= 20 with k >= 32 (it loses at k = 16, 20)
_MAX_SIDE = 64
_NT_MAX_SIDE = 20
_NT_MIN_K = 32


def matmul_twin(a, b):
    """a @ b with NumPy's batching rules."""
    if b.ndim == 2 and a.ndim > 2:
        # one BLAS call over all rows, not one per batch item (3x faster at (64,16,128))
        return (a.reshape(-1, a.shape[-1]) @ b).reshape(a.shape[:-1] + (b.shape[1],))
    return a @ b


def _cpu_kernels(a, b):
    """The Numba kernels to run a @ b with, or None for the twin."""
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        return None  # the twin raises NumPy's error for these
    if a.size == 0 or b.size == 0:
        return None
    if a.ndim < 2 or b.ndim < 3:
        macs = a.size * (b.shape[-1] if b.ndim > 1 else 1)
        return cpu_kernels_for("matmul", MIN_SIZE["matmul_2d"], macs, a, b)
    (m, k), n = a.shape[-2:], b.shape[-1]
    macs = max(a.size // (m * k), b.size // (k * n)) * m * k * n
    if not forced() and not _small_enough(b, m, k, n):
        return None
    return cpu_kernels_for("matmul", MIN_SIZE["matmul_batched"], macs, a, b)


def _small_enough(b, m: int, k: int, n: int) -> bool:
    """Auto mode's shape rule for the batched kernels (see the constants above)."""
    if max(m, n) > _MAX_SIDE:
        return False
    if np.swapaxes(b, -1, -2).flags.c_contiguous:  # the nt kernel
        return max(m, n) <= _NT_MAX_SIDE and k >= _NT_MIN_K
    return True


def _transposed_rows(b: np.ndarray) -> np.ndarray:
    """b with its last two axes swapped, as a C-contiguous array (free if b is a
    transposed view of a contiguous array)."""
    return as_kernel_array(np.swapaxes(b, -1, -2))


def _matmul_2d(cpu, a, b):
    a = as_kernel_array(a)
    bt = _transposed_rows(b)
    out = aligned_empty((a.shape[0], bt.shape[0]), a.dtype)
    cpu.gemm_nt(a, bt, out)
    return out


def _matmul_batched(cpu, a, b):
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
    bt = np.swapaxes(b, -1, -2)
    if bt.flags.c_contiguous:
        # b is the transpose of a contiguous array (q @ k^T): dot products along k
        cpu.batched_gemm_nt(a3, bt.reshape(-1, n, k), out)
    else:
        cpu.batched_gemm_nn(a3, as_kernel_array(b).reshape(-1, k, n), out)
    return out.reshape(batch_shape + (m, n))


def matmul(a, b):
    """a @ b with NumPy's rules: 2-D, batched (batch dimensions broadcast), 1-D operands
    (a vector a is a row, a vector b is a column, the added axis is dropped again)."""
    if gpu.eligible(a, b):
        return gpu.matmul(a, b)
    cpu = _cpu_kernels(a, b)
    if cpu is None:
        return matmul_twin(a, b)
    a2 = a[np.newaxis, :] if a.ndim == 1 else a
    b2 = b[:, np.newaxis] if b.ndim == 1 else b
    if b2.ndim == 2:
        # every row of every batch meets the same b: one 2-D product over all rows
        out = _matmul_2d(cpu, a2.reshape(-1, a2.shape[-1]), b2)
        out = out.reshape(a2.shape[:-1] + (b2.shape[1],))
    else:
        out = _matmul_batched(cpu, a2, b2)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out
