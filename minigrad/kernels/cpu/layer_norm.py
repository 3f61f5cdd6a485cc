"""Numba layer-norm kernels, forward and backward, over the rows of 2-D arrays.

Contract: x, g, dx and y are C-contiguous (rows, n), n >= 1; mean and rstd are (rows,);
weight and bias are (n,) (the dispatcher passes ones and zeros when the layer has none:
multiplying by 1 and adding 0 is exact). Every output is written in full.

Performance rule: one row lives in L1 while it is processed. The forward makes one pass
for the mean, one for the variance (two passes, as the twin, so no cancellation) and one
for the output; the backward one pass for its two row sums (accumulating dweight and
dbias on the way) and one for dx. Rows run in parallel (prange over row chunks, each with
its own dweight/dbias partial sums) only when `parallel` is true.
"""

import numpy as np
from numba import njit, prange

_FASTMATH = {"reassoc", "contract"}


@njit(fastmath=_FASTMATH, cache=True)
def _forward_row(x, weight, bias, eps, y):
    """y = (x - mean) * rstd * weight + bias; returns (mean, rstd)."""
    inv_n = x.dtype.type(1) / x.dtype.type(x.size)
    total = x.dtype.type(0)
    for j in range(x.size):
        total += x[j]
    mean = total * inv_n
    squares = x.dtype.type(0)
    for j in range(x.size):
        centered = x[j] - mean
        squares += centered * centered
    rstd = x.dtype.type(1) / np.sqrt(squares * inv_n + eps)
    for j in range(x.size):
        y[j] = (x[j] - mean) * rstd * weight[j] + bias[j]
    return mean, rstd


@njit(fastmath=_FASTMATH, cache=True)
def _backward_row(g, x, mean, rstd, weight, dx, dweight, dbias):
    """dx = rstd * (d - mean(d) - xhat * mean(d * xhat)), d = g * weight;
    dweight += g * xhat, dbias += g."""
    inv_n = x.dtype.type(1) / x.dtype.type(x.size)
    sum_d = x.dtype.type(0)
    sum_d_xhat = x.dtype.type(0)
    for j in range(x.size):
        xhat = (x[j] - mean) * rstd
        d = g[j] * weight[j]
        sum_d += d
        sum_d_xhat += d * xhat
        dweight[j] += g[j] * xhat
        dbias[j] += g[j]
    mean_d = sum_d * inv_n
    mean_d_xhat = sum_d_xhat * inv_n
    for j in range(x.size):
        xhat = (x[j] - mean) * rstd
        dx[j] = rstd * (g[j] * weight[j] - mean_d - xhat * mean_d_xhat)


@njit(cache=True, parallel=True)
def layer_norm(x, weight, bias, eps, y, mean, rstd, parallel):
    """y[r] = layer_norm(x[r]) for every row r, with its mean[r] and rstd[r]."""
    if parallel:
        for r in prange(x.shape[0]):
            mean[r], rstd[r] = _forward_row(x[r], weight, bias, eps, y[r])
    else:
        for r in range(x.shape[0]):
            mean[r], rstd[r] = _forward_row(x[r], weight, bias, eps, y[r])


@njit(cache=True)
def _backward_rows(g, x, mean, rstd, weight, dx, dweight, dbias, start, stop):
    dweight[:] = 0
    dbias[:] = 0
    for r in range(start, stop):
        _backward_row(g[r], x[r], mean[r], rstd[r], weight, dx[r], dweight, dbias)


@njit(cache=True, parallel=True)
def layer_norm_backward(g, x, mean, rstd, weight, dx, dweight_parts, dbias_parts):
    """dx for every row; dweight_parts[c] and dbias_parts[c] receive the sums of
    g * xhat and g over the c-th of len(dweight_parts) equal row chunks (the caller sums
    the parts). Chunks run in parallel when there is more than one."""
    chunks = dweight_parts.shape[0]
    rows = x.shape[0]
    if chunks == 1:
        _backward_rows(g, x, mean, rstd, weight, dx, dweight_parts[0], dbias_parts[0], 0, rows)
        return
    for c in prange(chunks):
        _backward_rows(g, x, mean, rstd, weight, dx, dweight_parts[c], dbias_parts[c],
                       c * rows // chunks, (c + 1) * rows // chunks)
