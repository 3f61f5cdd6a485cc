"""Numba softmax and log-softmax kernels, forward and backward, over the rows of 2-D arrays.

Contract: every array is C-contiguous with shape (rows, n), n >= 1; `out` is written in
full. Performance rule: rows go in chunks of about `_CHUNK` values (at least one row), so
a chunk stays in L1 across its passes. The forward works in explicit vectors (simd.py:
8 float32 or 4 float64 lanes, LLVM's own vector loop never reached a row of 20) and makes
three passes over a chunk, each over all its rows before the next pass: the row max, the
exp (the vector fast_exp, written into out) with the sum kept in a vector, then the scale
(log-softmax: the subtraction). Pass by pass, one row's chain of dependent steps (max,
horizontal reduce, exp, sum, divide) overlaps the next row's instead of stalling the core.
A row's last partial vector is loaded and stored masked, filled with -inf so its extra
lanes add exp(-inf) = 0 to the sum; a row whose length is a multiple of the lanes skips
it (a masked store costs on AMD even with an empty mask). The backward makes one pass for
the row sum and one for the result, indexing the 2-D arrays directly (a row view per row
costs more than a short row's arithmetic). Serial: on two cores a parallel region never
paid (the serial softmax beat prange at (64, 128, 1000), 11 ms against 15 ms).
"""

import numpy as np

from minigrad.kernels.cpu import simd
from minigrad.kernels.cpu.fast_exp import fast_exp
from minigrad.kernels.cpu.jit import kernel

# reassociation lets LLVM vectorise the row sums; no flag that assumes finite values,
# since -inf entries from masks are part of the contract
_FASTMATH = {"reassoc", "contract"}
# values per chunk: 2048 float32 of x and of out (16 KB) stay in L1 (32 KB) across the three
# forward passes
_CHUNK = 2048


@kernel
def _row_shifts(x, shifts, start, stop):
    """shifts[r - start] = max(x[r]) for rows start..stop-1, 0 for an all -inf row (so exp
    gives zeros, not NaN), in vectors (the last partial vector of a row is filled with
    -inf)."""
    n = x.shape[1]
    width = simd.lanes(x)
    full = n - n % width
    for r in range(start, stop):
        peak = simd.load_partial_filled(x, r, full, n - full, -np.inf)
        for j in range(0, full, width):
            peak = simd.maximum(peak, simd.load(x, r, j))
        shift = simd.reduce_max(peak)
        shifts[r - start] = shift if shift > -np.inf else 0


@kernel
def _softmax_rows(x, out, scratch, start, stop):
    """out[r] = exp(x[r] - max) / sum(exp(x[r] - max)) for rows start..stop-1; an all -inf
    row gives 0. scratch[0] holds each row's shift, then its scale."""
    n = x.shape[1]
    width = simd.lanes(x)
    full = n - n % width
    _row_shifts(x, scratch[0], start, stop)
    for r in range(start, stop):
        shift = simd.splat(x, scratch[0, r - start])
        sums = simd.zeros(x)
        for j in range(0, full, width):
            e = fast_exp(simd.subtract(simd.load(x, r, j), shift))
            simd.store(out, r, j, e)
            sums = simd.add(sums, e)
        if full < n:
            # the fill -inf gives exp = 0 in the lanes past the row's end
            tail = simd.load_partial_filled(x, r, full, n - full, -np.inf)
            e = fast_exp(simd.subtract(tail, shift))
            simd.store_partial(out, r, full, n - full, e)
            sums = simd.add(sums, e)
        total = simd.reduce_sum(sums)
        scratch[0, r - start] = 1 / total if total > 0 else 0
    for r in range(start, stop):
        scale = simd.splat(x, scratch[0, r - start])
        for j in range(0, full, width):
            simd.store(out, r, j, simd.multiply(simd.load(out, r, j), scale))
        if full < n:
            tail = simd.load_partial(out, r, full, n - full)
            simd.store_partial(out, r, full, n - full, simd.multiply(tail, scale))


@kernel
def log_softmax_rows(x, out, scratch, start, stop):
    """out[r] = x[r] - max - log(sum(exp(x[r] - max))) for rows start..stop-1; an all -inf
    row gives -inf (exp = 0). scratch[0] holds each row's shift, scratch[1] its sum, then log."""
    n = x.shape[1]
    width = simd.lanes(x)
    full = n - n % width
    _row_shifts(x, scratch[0], start, stop)
    for r in range(start, stop):
        shift = simd.splat(x, scratch[0, r - start])
        sums = simd.zeros(x)
        for j in range(0, full, width):
            sums = simd.add(sums, fast_exp(simd.subtract(simd.load(x, r, j), shift)))
        if full < n:
            tail = simd.load_partial_filled(x, r, full, n - full, -np.inf)
            sums = simd.add(sums, fast_exp(simd.subtract(tail, shift)))
        scratch[1, r - start] = simd.reduce_sum(sums)
    # log in its own loop: a libm call clobbers every vector register, so inside the exp
    # loop it would force the polynomial's constants out to the stack and back each row
    for i in range(stop - start):
        total = scratch[1, i]
        scratch[1, i] = np.log(total) if total > 0 else 0
    for r in range(start, stop):
        # two subtractions, as in the twin: max + log(total) would round at the max's scale
        shift = simd.splat(x, scratch[0, r - start])
        log_total = simd.splat(x, scratch[1, r - start])
        for j in range(0, full, width):
            z = simd.subtract(simd.subtract(simd.load(x, r, j), shift), log_total)
            simd.store(out, r, j, z)
        if full < n:
            tail = simd.load_partial(x, r, full, n - full)
            z = simd.subtract(simd.subtract(tail, shift), log_total)
            simd.store_partial(out, r, full, n - full, z)


@kernel(fastmath=_FASTMATH)
def _exp_into(source, values):
    """values = exp(source) over disjoint flat contiguous arrays (the same array would fail
    LLVM's overlap check and run the scalar loop)."""
    for e in range(values.size):
        values[e] = fast_exp(source[e])


@kernel(fastmath=_FASTMATH)
def _row_sum(x, r):
    total = x.dtype.type(0)
    for j in range(x.shape[1]):
        total += x[r, j]
    return total


@kernel(fastmath=_FASTMATH)
def _softmax_backward_rows(y, g, out, start, stop):
    """out[r] = y[r] * (g[r] - sum(g[r] * y[r])) for rows start..stop-1."""
    for r in range(start, stop):
        dot = y.dtype.type(0)
        for j in range(y.shape[1]):
            dot += g[r, j] * y[r, j]
        for j in range(y.shape[1]):
            out[r, j] = y[r, j] * (g[r, j] - dot)


@kernel(fastmath=_FASTMATH)
def _log_softmax_backward_rows(z, g, out, start, stop):
    """out[r] = g[r] - exp(z[r]) * sum(g[r]) for rows start..stop-1: flat exp first."""
    n = z.shape[1]
    _exp_into(z.reshape(-1)[start * n : stop * n], out.reshape(-1)[start * n : stop * n])
    for r in range(start, stop):
        total = _row_sum(g, r)
        for j in range(n):
            out[r, j] = g[r, j] - out[r, j] * total


@kernel
def chunk_rows(n):
    """Rows per chunk: about _CHUNK values, at least one row."""
    return max(1, _CHUNK // n)


@kernel
def softmax(x, out):
    """out[r] = softmax(x[r]) for every row r."""
    rows = x.shape[0]
    step = chunk_rows(x.shape[1])
    scratch = np.empty((2, step), x.dtype)
    for start in range(0, rows, step):
        _softmax_rows(x, out, scratch, start, min(rows, start + step))


@kernel
def log_softmax(x, out):
    """out[r] = log_softmax(x[r]) for every row r."""
    rows = x.shape[0]
    step = chunk_rows(x.shape[1])
    scratch = np.empty((2, step), x.dtype)
    for start in range(0, rows, step):
        log_softmax_rows(x, out, scratch, start, min(rows, start + step))


@kernel
def softmax_backward(y, g, out):
    """out[r] = y[r] * (g[r] - sum(g[r] * y[r])) for every row r."""
    _softmax_backward_rows(y, g, out, 0, y.shape[0])


@kernel
def log_softmax_backward(z, g, out):
    """out[r] = g[r] - exp(z[r]) * sum(g[r]) for every row r."""
    rows = z.shape[0]
    step = chunk_rows(z.shape[1])
    for start in range(0, rows, step):
        _log_softmax_backward_rows(z, g, out, start, min(rows, start + step))
