"""Matrix products with NumPy's `@` semantics (2-D, batched with broadcast batch dims, 1-D
operands): the reference twin, which is NumPy's or CuPy's `@` (BLAS, cuBLAS), and its
dispatcher.

On the CPU the twin is the kernel: BLAS takes transposed and strided operands as they are
(no copy), and no Numba product beat it forward and backward at the shapes the
Transformer uses (`python -m benchmarks.bench_modes`: 1.6-1.8x slower on the attention
products, whose operands are strided views a kernel must first copy, 2.7-3x on the
projections). CuPy arrays take the tiled Numba CUDA kernel in "numba" mode
(kernels/cuda/gemm.py), and cuBLAS otherwise.
"""
import numpy as np

from minigrad.kernels import cuda as gpu
from minigrad.kernels.dispatch import in_float32


def matmul_twin(a, b, out=None):
    """a @ b with NumPy's batching rules; into `out` when given (a NumPy array,
    C-contiguous, of the result's shape and dtype: a compiled plan's buffer,
    compile/buffers.py), by the same BLAS calls."""
    if b.ndim == 2 and a.ndim > 2:
        # one BLAS call over all rows, not one per batch item (3x faster at (64,16,128))
        rows = a.reshape(-1, a.shape[-1])
        if out is not None:
            np.matmul(rows, b, out=out.reshape(-1, b.shape[1]))
            return out
        return (rows @ b).reshape(a.shape[:-1] + (b.shape[1],))
    return a @ b if out is None else np.matmul(a, b, out=out)


def matmul(a, b):
    """a @ b with NumPy's rules: 2-D, batched (batch dimensions broadcast), 1-D operands
    (a vector a is a row, a vector b is a column, the added axis is dropped again)."""
    if gpu.eligible(a, b):
        return gpu.matmul(a, b)
    if type(a) is np.ndarray and a.dtype == b.dtype == np.float16:
        # NumPy has no float16 BLAS: its own loop, 5x slower than float32 BLAS on copies
        # (a mixed-precision training step); both sum in float32 and round once
        return in_float32(matmul_twin, a, b)
    return matmul_twin(a, b)
