"""Numba layer-norm kernels, forward and backward, over the rows of 2-D arrays.

Contract: x, g, dx and y are C-contiguous (rows, n), n >= 1; mean and rstd are (rows,);
weight and bias are (n,) (the dispatcher passes ones and zeros when the layer has none:
multiplying by 1 and adding 0 is exact). Every output is written in full.

Performance rule: one row lives in L1 while it is processed. The forward makes one pass
for the mean, one for the variance (two passes, as the twin, so no cancellation) and one
for the output; the backward one pass for its two row sums (accumulating dweight and
dbias on the way) and one for dx. The rows are indexed in place, not taken as row views: a
view per row cost as much as a row of 64's arithmetic (the forward took twice as long).
Serial (see softmax.py).
"""

import numpy as np

from minigrad.kernels.cpu.jit import kernel

_FASTMATH = {"reassoc", "contract"}


@kernel(fastmath=_FASTMATH)
def layer_norm(x, weight, bias, eps, y, mean, rstd):
    """y[r] = (x[r] - mean[r]) * rstd[r] * weight + bias for every row r, with
    mean[r] = <x[r]> and rstd[r] = 1 / sqrt(<(x[r] - mean[r])^2> + eps)."""
    n = x.shape[1]
    inv_n = x.dtype.type(1) / x.dtype.type(n)
    for r in range(x.shape[0]):
        total = x.dtype.type(0)
        for j in range(n):
            total += x[r, j]
        shift = total * inv_n
        squares = x.dtype.type(0)
        for j in range(n):
            centered = x[r, j] - shift
            squares += centered * centered
        scale = x.dtype.type(1) / np.sqrt(squares * inv_n + eps)
        for j in range(n):
            y[r, j] = (x[r, j] - shift) * scale * weight[j] + bias[j]
        mean[r] = shift
        rstd[r] = scale


@kernel(fastmath=_FASTMATH)
def layer_norm_backward(g, x, mean, rstd, weight, dx, dweight, dbias):
    """dx[r] = rstd[r] * (d - <d> - xhat * <d xhat>) for every row r, with d = g[r] * weight
    and xhat = (x[r] - mean[r]) * rstd[r]; dweight and dbias receive the sums over the rows
    of g * xhat and of g."""
    n = x.shape[1]
    inv_n = x.dtype.type(1) / x.dtype.type(n)
    dweight[:] = 0
    dbias[:] = 0
    for r in range(x.shape[0]):
        shift, scale = mean[r], rstd[r]
        sum_d = x.dtype.type(0)
        sum_d_xhat = x.dtype.type(0)
        for j in range(n):
            xhat = (x[r, j] - shift) * scale
            d = g[r, j] * weight[j]
            sum_d += d
            sum_d_xhat += d * xhat
            dweight[j] += g[r, j] * xhat
            dbias[j] += g[r, j]
        mean_d = sum_d * inv_n
        mean_d_xhat = sum_d_xhat * inv_n
        for j in range(n):
            xhat = (x[r, j] - shift) * scale
            dx[r, j] = scale * (g[r, j] * weight[j] - mean_d - xhat * mean_d_xhat)


@kernel(fastmath=_FASTMATH)
def layer_norm_weight_grad(g, x, mean, rstd, dweight):
    """dweight = sum over the rows of g * xhat (one pass, the row in L1)."""
    dweight[:] = 0
    for r in range(x.shape[0]):
        shift, scale = mean[r], rstd[r]
        for j in range(x.shape[1]):
            dweight[j] += g[r, j] * ((x[r, j] - shift) * scale)
