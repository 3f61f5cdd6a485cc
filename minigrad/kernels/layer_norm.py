"""Dispatchers for layer normalisation over the trailing `num_dims` dims, forward and
backward: the Numba row kernels of minigrad/kernels/cpu/layer_norm.py (the normalised dims
flattened into one row) or the reference twin. Thresholds are element counts measured by
benchmarks/bench_kernels.py (see benchmarks/README_kernels.md).
"""

import numpy as np

from minigrad.kernels import reference
from minigrad.kernels.dispatch import (
    FUSED_ROWS_MIN_ELEMENTS,
    PARALLEL_ELEMENTS,
    aligned_empty,
    as_kernel_array,
    forced,
    numba_eligible,
)

_PARALLEL_CHUNKS = 8


def _use_kernel(x, *others) -> bool:
    if x.size == 0 or not numba_eligible(x, *(a for a in others if a is not None)):
        # CuPy arrays take the twin: no CUDA kernel of this one
        return False
    return forced() or x.size >= FUSED_ROWS_MIN_ELEMENTS


def _row_length(x, num_dims: int) -> int:
    return int(np.prod(x.shape[x.ndim - num_dims :]))


def _flat(a, n: int, fill: float, dtype):
    """A contiguous (n,) view of an affine parameter, or `fill` everywhere without one."""
    if a is None:
        return np.full(n, fill, dtype)
    return as_kernel_array(a).reshape(n)


def layer_norm(x, weight, bias, num_dims: int, eps: float):
    """(y, mean, rstd) over the last num_dims dims: rstd = 1 / sqrt(var + eps),
    y = (x - mean) * rstd * weight + bias; mean and rstd keep the normalised dims as 1.
    weight and bias (the normalised shape) may be None."""
    if not _use_kernel(x, weight, bias):
        return reference.layer_norm(x, weight, bias, num_dims, eps)
    from minigrad.kernels.cpu import layer_norm as cpu

    n = _row_length(x, num_dims)
    rows = as_kernel_array(x).reshape(-1, n)
    out = aligned_empty(rows.shape, x.dtype)
    mean = np.empty(rows.shape[0], x.dtype)
    rstd = np.empty(rows.shape[0], x.dtype)
    cpu.layer_norm(rows, _flat(weight, n, 1, x.dtype), _flat(bias, n, 0, x.dtype),
                   x.dtype.type(eps), out, mean, rstd, x.size >= PARALLEL_ELEMENTS)
    kept = x.shape[: x.ndim - num_dims] + (1,) * num_dims
    return out.reshape(x.shape), mean.reshape(kept), rstd.reshape(kept)


def layer_norm_backward(g, x, mean, rstd, weight, num_dims: int):
    """(dx, dweight, dbias), given the upstream gradient g and the forward's x, mean and
    rstd: dx = rstd * (d - mean(d) - xhat * mean(d * xhat)) with d = g * weight,
    dweight = sum of g * xhat and dbias = sum of g over the leading dims (None without
    weight)."""
    if not _use_kernel(x, g, mean, rstd, weight) or g.shape != x.shape:
        return reference.layer_norm_backward(g, x, mean, rstd, weight, num_dims)
    from minigrad.kernels.cpu import layer_norm as cpu

    n = _row_length(x, num_dims)
    x_rows = as_kernel_array(x).reshape(-1, n)
    dx = aligned_empty(x_rows.shape, x.dtype)
    chunks = _PARALLEL_CHUNKS if x.size >= PARALLEL_ELEMENTS else 1
    dweight_parts = np.empty((chunks, n), x.dtype)
    dbias_parts = np.empty((chunks, n), x.dtype)
    cpu.layer_norm_backward(as_kernel_array(g).reshape(-1, n), x_rows,
                            as_kernel_array(mean).reshape(-1), as_kernel_array(rstd).reshape(-1),
                            _flat(weight, n, 1, x.dtype), dx, dweight_parts, dbias_parts)
    if weight is None:
        return dx.reshape(x.shape), None, None
    shape = x.shape[x.ndim - num_dims :]
    dweight = dweight_parts.sum(axis=0).reshape(shape)
    return dx.reshape(x.shape), dweight, dbias_parts.sum(axis=0).reshape(shape)


def layer_norm_weight_grad(g, x, mean, rstd, num_dims: int):
    """dweight = sum over the leading dims of g * xhat, xhat = (x - mean) * rstd."""
    return reference.layer_norm_weight_grad(g, x, mean, rstd, num_dims)
