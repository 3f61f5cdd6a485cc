"""Layer normalisation over the trailing `num_dims` dims, forward and gradients: the
reference twins in plain `xp` code, and their dispatchers (the Numba row kernels of
kernels/cpu/layer_norm.py, the normalised dims flattened into one row, where dispatch.py
and the thresholds allow).

Per row: mean = <x>, rstd = 1 / sqrt(<(x - mean)^2> + eps), xhat = (x - mean) * rstd, where
<.> is the mean over the row. mean and rstd keep the normalised dims as size 1. float16
inputs are computed in float32, and mean and rstd stay float32.
"""
import math

import numpy as np

from minigrad.backend import array_module
from minigrad.kernels.dispatch import (
    any_half,
    as_kernel_array,
    cpu_kernels_for,
    in_float32,
)
from minigrad.kernels.thresholds import MIN_SIZE

# ----------------------------------------------------------------------------- twins


def layer_norm_twin(x, weight, bias, num_dims: int, eps: float):
    """(y, mean, rstd): y = xhat * weight + bias (weight and bias may be None)."""
    xp = array_module(x)
    dims = tuple(range(-num_dims, 0))
    mean = x.mean(axis=dims, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=dims, keepdims=True)
    rstd = 1.0 / xp.sqrt(var + eps)
    out = centered * rstd
    if weight is not None:
        out *= weight
    if bias is not None:
        out += bias
    return out, mean, rstd


def layer_norm_backward_twin(g, x, mean, rstd, weight, num_dims: int):
    """(dx, dweight, dbias): dx = rstd * (d - <d> - xhat <d xhat>) with d = g * weight;
    dweight = sum of g * xhat and dbias = sum of g over the leading dims (None without a
    weight)."""
    dims = tuple(range(-num_dims, 0))
    xhat = (x - mean) * rstd
    d = g * weight if weight is not None else g
    mean_d = d.mean(axis=dims, keepdims=True)
    mean_d_xhat = (d * xhat).mean(axis=dims, keepdims=True)
    dx = rstd * (d - mean_d - xhat * mean_d_xhat)
    if weight is None:
        return dx, None, None
    leading = tuple(range(x.ndim - num_dims))
    return dx, (g * xhat).sum(axis=leading), g.sum(axis=leading)


def layer_norm_weight_grad_twin(g, x, mean, rstd, num_dims: int):
    """dweight = sum over the leading dims of g * xhat."""
    leading = tuple(range(x.ndim - num_dims))
    return (g * ((x - mean) * rstd)).sum(axis=leading)


# ----------------------------------------------------------------------------- dispatch


def layer_norm(x, weight, bias, num_dims: int, eps: float):
    """(y, mean, rstd) over the last num_dims dims (see the module docstring)."""
    if any_half(x, weight, bias):
        return in_float32(layer_norm, x, weight, bias, num_dims=num_dims, eps=eps,
                          keep_float32=(1, 2))
    others = [a for a in (weight, bias) if a is not None]
    cpu = cpu_kernels_for("layer_norm", MIN_SIZE["layer_norm"], x.size, x, *others)
    if cpu is None:
        return layer_norm_twin(x, weight, bias, num_dims, eps)
    n = _row_length(x, num_dims)
    rows = as_kernel_array(x).reshape(-1, n)
    # plain np.empty, as softmax.py's: in a compiled minGPT-style step (profile_plan) its
    # nine forwards and backwards took 0.61 and 0.63 ms with aligned_empty, 0.44 and 0.44
    out = np.empty(rows.shape, x.dtype)
    mean = np.empty(rows.shape[0], x.dtype)
    rstd = np.empty(rows.shape[0], x.dtype)
    cpu.layer_norm(rows, _flat(weight, n, 1, x.dtype), _flat(bias, n, 0, x.dtype),
                   x.dtype.type(eps), out, mean, rstd)
    kept = x.shape[: x.ndim - num_dims] + (1,) * num_dims
    return out.reshape(x.shape), mean.reshape(kept), rstd.reshape(kept)


def layer_norm_backward(g, x, mean, rstd, weight, num_dims: int):
    """(dx, dweight, dbias), given the upstream gradient g and the forward's x, mean and
    rstd (see layer_norm_backward_twin)."""
    if any_half(g, x, weight):
        return in_float32(layer_norm_backward, g, x, mean, rstd, weight, num_dims=num_dims)
    arrays = [a for a in (g, x, mean, rstd, weight) if a is not None]
    cpu = cpu_kernels_for("layer_norm", MIN_SIZE["layer_norm_backward"], x.size, *arrays)
    if cpu is None or g.shape != x.shape:
        return layer_norm_backward_twin(g, x, mean, rstd, weight, num_dims)
    n = _row_length(x, num_dims)
    x_rows = as_kernel_array(x).reshape(-1, n)
    dx = np.empty(x_rows.shape, x.dtype)
    dweight = np.empty(n, x.dtype)
    dbias = np.empty(n, x.dtype)
    cpu.layer_norm_backward(as_kernel_array(g).reshape(-1, n), x_rows,
                            as_kernel_array(mean).reshape(-1), as_kernel_array(rstd).reshape(-1),
                            _flat(weight, n, 1, x.dtype), dx, dweight, dbias)
    if weight is None:
        return dx.reshape(x.shape), None, None
    shape = x.shape[x.ndim - num_dims :]
    return dx.reshape(x.shape), dweight.reshape(shape), dbias.reshape(shape)


def layer_norm_weight_grad(g, x, mean, rstd, num_dims: int):
    """dweight = sum over the leading dims of g * xhat."""
    if any_half(g, x):
        return in_float32(layer_norm_weight_grad, g, x, mean, rstd, num_dims=num_dims)
    cpu = cpu_kernels_for("layer_norm", MIN_SIZE["layer_norm_weight_grad"], x.size, g, x,
                          mean, rstd)
    if cpu is None or g.shape != x.shape:
        return layer_norm_weight_grad_twin(g, x, mean, rstd, num_dims)
    n = _row_length(x, num_dims)
    dweight = np.empty(n, x.dtype)
    cpu.layer_norm_weight_grad(as_kernel_array(g).reshape(-1, n), as_kernel_array(x).reshape(-1, n),
                               as_kernel_array(mean).reshape(-1), as_kernel_array(rstd).reshape(-1),
                               dweight)
    return dweight.reshape(x.shape[x.ndim - num_dims:])


def _row_length(x, num_dims: int) -> int:
    return math.prod(x.shape[x.ndim - num_dims :])


def _flat(a, n: int, fill: float, dtype):
    """A contiguous (n,) view of an affine parameter, or `fill` everywhere without one."""
    if a is None:
        return np.full(n, fill, dtype)
    return as_kernel_array(a).reshape(n)
