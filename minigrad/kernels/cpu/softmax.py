"""Numba softmax and log-softmax kernels, forward and backward, over the rows of 2-D arrays.

Contract: every array is C-contiguous with shape (rows, n), n >= 1; `out` is written in
full. Performance rule: one row lives in L1 while it is processed, so each pass over it is
cheap. Rows of at least `_SHORT_ROW` values: the forward makes one pass for the max and one
for exp + sum (then a scale). Shorter rows are too short for LLVM's vector loop (8 lanes,
unrolled 4 times, so a row of 20 runs in its scalar remainder), so they go in chunks of
about `_CHUNK` values: the row passes (max, shift, sum, scale) stay scalar, and the exp runs
as one flat vectorised loop over the whole chunk. The backward makes one pass for the row
sum and one for the result, indexing the 2-D arrays directly (a row view per row costs
more than a short row's arithmetic). Rows (or chunks) run in parallel (prange) only when
`parallel` is true: the dispatcher sets it above a measured size, because a parallel
region costs a thread wake-up that small inputs never win back.
"""

import numpy as np
from numba import njit, prange

from minigrad.kernels.cpu.fast_exp import fast_exp

# reassociation lets LLVM vectorise the row sums; no flag that assumes finite values,
# since -inf entries from masks are part of the contract
_FASTMATH = {"reassoc", "contract"}
# measured at 102400 values, float32 / float64, load 1.4 (ms, row kernel against chunks):
# n = 8: 0.64 / 0.36 and 0.61 / 0.42; n = 20: 0.27 / 0.19 and 0.57 / 0.44; n = 32: 0.20 /
# 0.18 and 0.35 / 0.38; n = 64: 0.19 / 0.21 and 0.31 / 0.36
_SHORT_ROW = 32
_CHUNK = 2048


@njit(fastmath=_FASTMATH, cache=True)
def row_max(x):
    # a fully masked row has max -inf; shift by 0 instead so exp gives zeros, not NaN
    peak = x[0]
    for value in x[1:]:
        peak = max(peak, value)
    return peak if peak > -np.inf else x.dtype.type(0)


@njit(fastmath=_FASTMATH, cache=True)
def _softmax_row(x, y):
    """y = exp(x - max) / sum(exp(x - max)); an all -inf row gives 0."""
    shift = row_max(x)
    total = x.dtype.type(0)
    for j in range(x.size):
        e = fast_exp(x[j] - shift)
        y[j] = e
        total += e
    scale = 1 / total if total > 0 else x.dtype.type(0)
    for j in range(x.size):
        y[j] *= scale


@njit(fastmath=_FASTMATH, cache=True)
def _log_softmax_row(x, z):
    """z = x - max - log(sum(exp(x - max))); an all -inf row gives -inf (exp(z) = 0)."""
    shift = row_max(x)
    total = x.dtype.type(0)
    for j in range(x.size):
        total += fast_exp(x[j] - shift)
    log_total = np.log(total) if total > 0 else x.dtype.type(0)
    for j in range(x.size):
        z[j] = x[j] - shift - log_total


@njit(fastmath=_FASTMATH, cache=True)
def _exp_in_place(values):
    """values = exp(values) over a flat contiguous array: one vectorised loop."""
    for e in range(values.size):
        values[e] = fast_exp(values[e])


@njit(fastmath=_FASTMATH, cache=True)
def _exp_into(source, values):
    """values = exp(source) over disjoint flat contiguous arrays (the same array would fail
    LLVM's overlap check and run the scalar loop: use _exp_in_place)."""
    for e in range(values.size):
        values[e] = fast_exp(source[e])


@njit(fastmath=_FASTMATH, cache=True)
def _shift_rows(x, out, start, stop):
    """out[r] = x[r] - row_max(x[r]) for rows start..stop-1."""
    for r in range(start, stop):
        # row_max(x[r]) inlined: a row view costs more than a short row's max
        peak = x[r, 0]
        for j in range(1, x.shape[1]):
            peak = max(peak, x[r, j])
        shift = peak if peak > -np.inf else x.dtype.type(0)
        for j in range(x.shape[1]):
            out[r, j] = x[r, j] - shift


@njit(fastmath=_FASTMATH, cache=True)
def _row_sum(x, r):
    total = x.dtype.type(0)
    for j in range(x.shape[1]):
        total += x[r, j]
    return total


@njit(fastmath=_FASTMATH, cache=True)
def _softmax_short_rows(x, out, start, stop):
    """Rows start..stop-1 of a short-row softmax: shift, flat exp, normalise."""
    n = x.shape[1]
    _shift_rows(x, out, start, stop)
    _exp_in_place(out.reshape(-1)[start * n : stop * n])
    for r in range(start, stop):
        total = _row_sum(out, r)
        scale = 1 / total if total > 0 else x.dtype.type(0)
        for j in range(n):
            out[r, j] *= scale


@njit(fastmath=_FASTMATH, cache=True)
def _log_softmax_short_rows(x, out, scratch, start, stop):
    """Rows start..stop-1 of a short-row log-softmax; scratch holds the chunk's exps."""
    n = x.shape[1]
    _shift_rows(x, out, start, stop)
    exps = scratch[: (stop - start) * n]
    _exp_into(out.reshape(-1)[start * n : stop * n], exps)
    exps = exps.reshape(stop - start, n)
    for r in range(start, stop):
        total = _row_sum(exps, r - start)
        log_total = np.log(total) if total > 0 else x.dtype.type(0)
        for j in range(n):
            out[r, j] -= log_total


@njit(fastmath=_FASTMATH, cache=True)
def _softmax_backward_rows(y, g, out, start, stop):
    """out[r] = y[r] * (g[r] - sum(g[r] * y[r])) for rows start..stop-1."""
    for r in range(start, stop):
        dot = y.dtype.type(0)
        for j in range(y.shape[1]):
            dot += g[r, j] * y[r, j]
        for j in range(y.shape[1]):
            out[r, j] = y[r, j] * (g[r, j] - dot)


@njit(fastmath=_FASTMATH, cache=True)
def _log_softmax_backward_rows(z, g, out, start, stop):
    """out[r] = g[r] - exp(z[r]) * sum(g[r]) for rows start..stop-1: flat exp first."""
    n = z.shape[1]
    _exp_into(z.reshape(-1)[start * n : stop * n], out.reshape(-1)[start * n : stop * n])
    for r in range(start, stop):
        total = _row_sum(g, r)
        for j in range(n):
            out[r, j] = g[r, j] - out[r, j] * total


@njit(cache=True)
def _chunk_rows(n):
    """Rows per chunk: about _CHUNK values, at least one row."""
    return max(1, _CHUNK // n)


@njit(cache=True, parallel=True)
def softmax(x, out, parallel):
    """out[r] = softmax(x[r]) for every row r."""
    rows, n = x.shape
    if n >= _SHORT_ROW:
        if parallel:
            for r in prange(rows):
                _softmax_row(x[r], out[r])
        else:
            for r in range(rows):
                _softmax_row(x[r], out[r])
        return
    step = _chunk_rows(n)
    chunks = (rows + step - 1) // step
    if parallel:
        for c in prange(chunks):
            _softmax_short_rows(x, out, c * step, min(rows, (c + 1) * step))
    else:
        for c in range(chunks):
            _softmax_short_rows(x, out, c * step, min(rows, (c + 1) * step))


@njit(cache=True, parallel=True)
def log_softmax(x, out, parallel):
    """out[r] = log_softmax(x[r]) for every row r."""
    rows, n = x.shape
    if n >= _SHORT_ROW:
        if parallel:
            for r in prange(rows):
                _log_softmax_row(x[r], out[r])
        else:
            for r in range(rows):
                _log_softmax_row(x[r], out[r])
        return
    step = _chunk_rows(n)
    chunks = (rows + step - 1) // step
    if parallel:
        for c in prange(chunks):
            scratch = np.empty(step * n, x.dtype)
            _log_softmax_short_rows(x, out, scratch, c * step, min(rows, (c + 1) * step))
    else:
        scratch = np.empty(step * n, x.dtype)
        for c in range(chunks):
            _log_softmax_short_rows(x, out, scratch, c * step, min(rows, (c + 1) * step))


@njit(cache=True, parallel=True)
def softmax_backward(y, g, out, parallel):
    """out[r] = y[r] * (g[r] - sum(g[r] * y[r])) for every row r."""
    rows = y.shape[0]
    step = _chunk_rows(y.shape[1])
    if parallel:
        for c in prange((rows + step - 1) // step):
            _softmax_backward_rows(y, g, out, c * step, min(rows, (c + 1) * step))
    else:
        _softmax_backward_rows(y, g, out, 0, rows)


@njit(cache=True, parallel=True)
def log_softmax_backward(z, g, out, parallel):
    """out[r] = g[r] - exp(z[r]) * sum(g[r]) for every row r."""
    rows = z.shape[0]
    step = _chunk_rows(z.shape[1])
    chunks = (rows + step - 1) // step
    if parallel:
        for c in prange(chunks):
            _log_softmax_backward_rows(z, g, out, c * step, min(rows, (c + 1) * step))
    else:
        for c in range(chunks):
            _log_softmax_backward_rows(z, g, out, c * step, min(rows, (c + 1) * step))
