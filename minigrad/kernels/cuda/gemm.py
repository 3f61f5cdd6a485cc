"""Batched matrix product as a numba.cuda kernel: the alternative to cuBLAS that
MINIGRAD_KERNELS=numba selects (cuBLAS, through cupy.matmul, is the default: it is
faster at every size that matters).

Contract: a (batch, m, k) and b (batch, k, n) of one float dtype, any strides (broadcast
batch dimensions may have stride 0); out (batch, m, n) C-contiguous, written whole.

Performance rule: the classic shared-memory tiling. A 16 x 16 block computes a 16 x 16
tile of out; for each step along k it stages one tile of a and one of b in shared
memory, so every element loaded from global memory is used 16 times. Grid x walks the
column tiles (up to 2**31 - 1 of them), grid y the row tiles and grid z the batch; y and
z are limited to 65535 blocks, so a block strides over further row tiles and batch
entries (a million rows need 62,500 row tiles).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda, from_dtype

from minigrad.backend import array_module
from minigrad.kernels.cuda.launch import launch

TILE = 16
MAX_GRID_Y = 65535  # CUDA's limits for grid y and z (x allows 2**31 - 1)
MAX_GRID_Z = 65535


@functools.cache
def gemm_kernel(dtype: np.dtype):
    """The tiled kernel for one dtype (compiled on first launch)."""
    scalar = from_dtype(dtype)
    zero = dtype.type(0)

    @cuda.jit
    def batched_gemm(a, b, out):
        """out[p] = a[p] @ b[p] for every batch index p"""
        tile_a = cuda.shared.array((TILE, TILE), scalar)
        tile_b = cuda.shared.array((TILE, TILE), scalar)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        col = cuda.blockIdx.x * TILE + tx
        m, k, n = a.shape[1], a.shape[2], b.shape[2]
        row_tiles = (m + TILE - 1) // TILE
        for p in range(cuda.blockIdx.z, a.shape[0], cuda.gridDim.z):
            for row_tile in range(cuda.blockIdx.y, row_tiles, cuda.gridDim.y):
                row = row_tile * TILE + ty
                total = zero
                for start in range(0, k, TILE):
                    # out-of-range threads load zeros: the inner loop needs no bounds checks
                    tile_a[ty, tx] = (a[p, row, start + tx] if row < m and start + tx < k
                                      else zero)
                    tile_b[ty, tx] = (b[p, start + ty, col] if start + ty < k and col < n
                                      else zero)
                    cuda.syncthreads()
                    for i in range(TILE):
                        total += tile_a[ty, i] * tile_b[i, tx]
                    cuda.syncthreads()
                if row < m and col < n:
                    out[p, row, col] = total

    return batched_gemm


def matmul(a, b):
    """a @ b with NumPy's rules: 2-D, batched (batch dims broadcast), 1-D operands (a
    vector a is a row, a vector b a column, and the added axis is dropped again)."""
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} cannot be multiplied")
    if a.dtype != b.dtype:
        raise ValueError(f"matmul: dtypes {a.dtype} and {b.dtype} differ")
    xp = array_module(a)
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    if b2.ndim == 2:
        # every row of every batch meets the same b: one product over all rows of a
        rows = math.prod(a2.shape[:-1])
        out = _gemm(xp, a2.reshape(1, rows, a2.shape[-1]), b2[None])
        out = out.reshape(a2.shape[:-1] + (b2.shape[1],))
    else:
        batch_shape = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        a3 = _batched(xp, a2, batch_shape)
        b3 = _batched(xp, b2, batch_shape)
        out = _gemm(xp, a3, b3).reshape(batch_shape + (a2.shape[-2], b2.shape[-1]))
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


def _batched(xp, array, batch_shape: tuple):
    """`array` broadcast to `batch_shape` and flattened to 3-D (copied only where a batch
    dimension is broadcast)."""
    shape = batch_shape + array.shape[-2:]
    if array.shape != shape:
        array = xp.ascontiguousarray(xp.broadcast_to(array, shape))
    return array.reshape(-1, *shape[-2:])


def _gemm(xp, a3, b3):
    """out[p] = a3[p] @ b3[p] for 3-D arrays of one batch size."""
    (batch, m, k), n = a3.shape, b3.shape[-1]
    out = xp.zeros((batch, m, n), dtype=a3.dtype)
    if out.size and k:
        grid = (-(-n // TILE), min(-(-m // TILE), MAX_GRID_Y), min(batch, MAX_GRID_Z))
        launch(gemm_kernel(out.dtype), grid, (TILE, TILE), a3, b3, out)
    return out
