"""Numba softmax and log-softmax kernels, forward and backward, over the rows of 2-D arrays.

Contract: every array is C-contiguous with shape (rows, n), n >= 1; `out` is written in
full. Performance rule: one row lives in L1 while it is processed, so each pass over it is
cheap; the forward makes one pass for the max and one for exp + sum (then a scale), the
backward one pass for the row sum and one for the result. Rows run in parallel (prange)
only when `parallel` is true: the dispatcher sets it above a measured size, because a
parallel region costs a thread wake-up that small inputs never win back.
"""

import numpy as np
from numba import njit, prange

from minigrad.kernels.cpu.fast_exp import fast_exp

# reassociation lets LLVM vectorise the row sums; no flag that assumes finite values,
# since -inf entries from masks are part of the contract
_FASTMATH = {"reassoc", "contract"}


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
def _softmax_backward_row(y, g, dx):
    """dx = y * (g - sum(g * y))"""
    dot = y.dtype.type(0)
    for j in range(y.size):
        dot += g[j] * y[j]
    for j in range(y.size):
        dx[j] = y[j] * (g[j] - dot)


@njit(fastmath=_FASTMATH, cache=True)
def _log_softmax_backward_row(z, g, dx):
    """dx = g - exp(z) * sum(g)"""
    total = z.dtype.type(0)
    for j in range(z.size):
        total += g[j]
    for j in range(z.size):
        dx[j] = g[j] - fast_exp(z[j]) * total


@njit(cache=True, parallel=True)
def softmax(x, out, parallel):
    """out[r] = softmax(x[r]) for every row r."""
    if parallel:
        for r in prange(x.shape[0]):
            _softmax_row(x[r], out[r])
    else:
        for r in range(x.shape[0]):
            _softmax_row(x[r], out[r])


@njit(cache=True, parallel=True)
def log_softmax(x, out, parallel):
    """out[r] = log_softmax(x[r]) for every row r."""
    if parallel:
        for r in prange(x.shape[0]):
            _log_softmax_row(x[r], out[r])
    else:
        for r in range(x.shape[0]):
            _log_softmax_row(x[r], out[r])


@njit(cache=True, parallel=True)
def softmax_backward(y, g, out, parallel):
    """out[r] = y[r] * (g[r] - sum(g[r] * y[r])) for every row r."""
    if parallel:
        for r in prange(y.shape[0]):
            _softmax_backward_row(y[r], g[r], out[r])
    else:
        for r in range(y.shape[0]):
            _softmax_backward_row(y[r], g[r], out[r])


@njit(cache=True, parallel=True)
def log_softmax_backward(z, g, out, parallel):
    """out[r] = g[r] - exp(z[r]) * sum(g[r]) for every row r."""
    if parallel:
        for r in prange(z.shape[0]):
            _log_softmax_backward_row(z[r], g[r], out[r])
    else:
        for r in range(z.shape[0]):
            _log_softmax_backward_row(z[r], g[r], out[r])
