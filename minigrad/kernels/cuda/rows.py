"""Softmax and log-softmax over rows, forward and backward, as numba.cuda kernels.

Contract (the twins are in minigrad/kernels/softmax.py): x, y, z, g are C-contiguous
2-D float32 or float64 arrays of one shape (rows, n); each kernel writes `out` of that
shape, row by row, with the twins' conventions for fully masked rows (all -inf: softmax
gives 0, log-softmax gives -inf).

Performance rule: one thread block per row, its threads striding over the row so loads
are coalesced; a row costs one read pass per reduction plus one write pass, with the
reductions done as a tree in shared memory. The block is the smallest power of two
holding the row, between 32 and 256 threads, so short rows do not idle a large block.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda, from_dtype

from minigrad.backend import array_module
from minigrad.kernels.cuda.launch import launch

MIN_BLOCK = 32  # one warp
MAX_BLOCK = 256


def block_size(n: int) -> int:
    """Threads per row: the smallest power of two >= n, clamped to [32, 256]."""
    size = MIN_BLOCK
    while size < n and size < MAX_BLOCK:
        size *= 2
    return size


@functools.cache
def row_kernels(dtype: np.dtype, block: int) -> dict:
    """The four row kernels for one dtype and block size, by name (compiled on first
    launch; shared memory and constants need the dtype at compile time)."""
    scalar = from_dtype(dtype)
    zero, one, minus_inf = dtype.type(0), dtype.type(1), dtype.type(-np.inf)

    @cuda.jit(device=True)
    def block_reduce(scratch, value, take_max):
        """max (take_max) or sum of `value` over the block's threads, returned to all."""
        tid = cuda.threadIdx.x
        cuda.syncthreads()  # every thread has read the previous result out of scratch
        scratch[tid] = value
        cuda.syncthreads()
        stride = block // 2
        while stride > 0:
            if tid < stride:
                other = scratch[tid + stride]
                if take_max:
                    scratch[tid] = max(scratch[tid], other)
                else:
                    scratch[tid] += other
            cuda.syncthreads()
            stride //= 2
        return scratch[0]

    @cuda.jit(device=True)
    def row_shift_and_total(x, row, scratch):
        """(m, sum(exp(x - m))) for one row, m its max (0 when not finite, so a fully
        masked row gives exp(-inf) = 0 instead of NaN)."""
        tid = cuda.threadIdx.x
        local = minus_inf
        for j in range(tid, x.shape[1], block):
            local = max(local, x[row, j])
        shift = block_reduce(scratch, local, True)
        if not math.isfinite(shift):
            shift = zero
        local = zero
        for j in range(tid, x.shape[1], block):
            local += math.exp(x[row, j] - shift)
        return shift, block_reduce(scratch, local, False)

    @cuda.jit
    def softmax(x, out):
        """out = exp(x - m) / sum(exp(x - m)), 0 for a row whose sum is 0"""
        row = cuda.blockIdx.x
        scratch = cuda.shared.array(block, scalar)
        shift, total = row_shift_and_total(x, row, scratch)
        scale = one / total if total != zero else zero
        for j in range(cuda.threadIdx.x, x.shape[1], block):
            out[row, j] = math.exp(x[row, j] - shift) * scale

    @cuda.jit
    def log_softmax(x, out):
        """out = x - m - log(sum(exp(x - m))), x itself for a row whose sum is 0"""
        row = cuda.blockIdx.x
        scratch = cuda.shared.array(block, scalar)
        shift, total = row_shift_and_total(x, row, scratch)
        log_total = math.log(total) if total != zero else zero
        for j in range(cuda.threadIdx.x, x.shape[1], block):
            # shift first: x - m is exact near the max, where x - (m + log_total) is not
            out[row, j] = (x[row, j] - shift) - log_total

    @cuda.jit
    def softmax_backward(y, g, out):
        """out = y * (g - sum(g * y))"""
        row = cuda.blockIdx.x
        scratch = cuda.shared.array(block, scalar)
        local = zero
        for j in range(cuda.threadIdx.x, y.shape[1], block):
            local += g[row, j] * y[row, j]
        dot = block_reduce(scratch, local, False)
        for j in range(cuda.threadIdx.x, y.shape[1], block):
            out[row, j] = y[row, j] * (g[row, j] - dot)

    @cuda.jit
    def log_softmax_backward(z, g, out):
        """out = g - exp(z) * sum(g)"""
        row = cuda.blockIdx.x
        scratch = cuda.shared.array(block, scalar)
        local = zero
        for j in range(cuda.threadIdx.x, z.shape[1], block):
            local += g[row, j]
        total = block_reduce(scratch, local, False)
        for j in range(cuda.threadIdx.x, z.shape[1], block):
            out[row, j] = g[row, j] - math.exp(z[row, j]) * total

    return {
        "softmax": softmax,
        "log_softmax": log_softmax,
        "softmax_backward": softmax_backward,
        "log_softmax_backward": log_softmax_backward,
    }


def run(name: str, *arrays):
    """Apply row kernel `name` over the last axis of same-shaped arrays; a fresh output."""
    first = arrays[0]
    xp = array_module(first)
    rows = [xp.ascontiguousarray(a).reshape(-1, first.shape[-1]) for a in arrays]
    out = xp.empty_like(rows[0])
    if out.size:
        block = block_size(out.shape[1])
        launch(row_kernels(out.dtype, block)[name], out.shape[0], block, *rows, out)
    return out.reshape(first.shape)
