"""Numba layer-norm kernels, forward and backward, over the rows of 2-D arrays.

Contract: x, g, dx and y are C-contiguous (rows, n), n >= 1; mean and rstd are (rows,);
weight and bias are (n,) (the dispatcher passes ones and zeros when the layer has none:
multiplying by 1 and adding 0 is exact). Every output is written in full.

Performance rule: one row lives in L1 while it is processed. The forward makes one pass
for the mean, one for the variance (two passes, as the twin, so no cancellation) and one
for the output; the backward one pass for its two row sums (accumulating dweight and
dbias on the way) and one for dx. Serial (see softmax.py).
"""

import numpy as np

from minigrad.kernels.cpu.jit import kernel

_FASTMATH = {"reassoc", "contract"}


@kernel(fastmath=_FASTMATH)
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


@kernel(fastmath=_FASTMATH)
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


@kernel
def layer_norm(x, weight, bias, eps, y, mean, rstd):
    """y[r] = layer_norm(x[r]) for every row r, with its mean[r] and rstd[r]."""
    for r in range(x.shape[0]):
        mean[r], rstd[r] = _forward_row(x[r], weight, bias, eps, y[r])


@kernel
def layer_norm_backward(g, x, mean, rstd, weight, dx, dweight, dbias):
    """dx for every row; dweight and dbias receive the sums over the rows of g * xhat and
    of g."""
    dweight[:] = 0
    dbias[:] = 0
    for r in range(x.shape[0]):
        _backward_row(g[r], x[r], mean[r], rstd[r], weight, dx[r], dweight, dbias)


@kernel(fastmath=_FASTMATH)
def layer_norm_weight_grad(g, x, mean, rstd, dweight):
    """dweight = sum over the rows of g * xhat (one pass, the row in L1)."""
    dweight[:] = 0
    for r in range(x.shape[0]):
        shift, scale = mean[r], rstd[r]
        for j in range(x.shape[1]):
            dweight[j] += g[r, j] * ((x[r, j] - shift) * scale)
