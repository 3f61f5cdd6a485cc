"""Reductions: sum, mean, max/min, arg-max/min, var/std, logsumexp.

float16 sums accumulate in float32, as PyTorch's do: a float16 running sum stops growing at
2048 (adding 1 no longer changes it) and overflows at 65504. mean, var, std and logsumexp
of float16 tensors are computed in float32 throughout and returned as float16.
"""
from __future__ import annotations

import functools
import math
from collections import namedtuple

import numpy as np

from minigrad import dtypes
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.kernels.leading_sum import leading_sum
from minigrad.ops.operands import normalize_dim, normalize_dims
from minigrad.ops.select import maximum, minimum, where
from minigrad.ops.shape import broadcast_to
from minigrad.tensor_base import TensorBase

MaxResult = namedtuple("MaxResult", ["values", "indices"])


class Sum(Function):
    """out = sum of x over dims;  dx = g broadcast back over the summed dims"""

    def forward(self, x, dims=None, keepdim=False):
        self.input_shape = x.shape
        # the gradient broadcasts back as it is when it kept the summed dims as 1, or when
        # everything was summed (a 0-d gradient); otherwise they are put back first
        self.kept_shape = None if keepdim or dims is None else _kept_shape(x.shape, dims)
        if x.dtype == np.float16:
            return x.sum(axis=dims, keepdims=keepdim, dtype=np.float32).astype(np.float16)
        if dims and dims == tuple(range(len(dims))):  # leading dims only: rows to add up
            out = leading_sum(x, len(dims))
            return out.reshape(_kept_shape(x.shape, dims)) if keepdim else out
        return x.sum(axis=dims, keepdims=keepdim)

    def backward(self, grad):
        if self.kept_shape is not None:
            grad = grad.reshape(self.kept_shape)
        return broadcast_to(grad, self.input_shape)


class Amax(Function):
    """out = max of x over dims;  dx = g shared evenly by the elements equal to the max"""

    def forward(self, x, dims=None, keepdim=False, smallest=False):
        extreme = x.min(axis=dims, keepdims=True) if smallest else x.max(axis=dims, keepdims=True)
        self.save_for_backward(x)
        self.extreme = extreme
        self.dims = dims
        return extreme if keepdim else extreme.reshape(_reduced_shape(x.shape, dims))

    def backward(self, grad):
        (x,) = self.saved
        is_extreme = x.array == self.extreme
        share = is_extreme / is_extreme.sum(axis=self.dims, keepdims=True)
        share = x._wrap(share.astype(x.array.dtype, copy=False))
        return broadcast_to(grad.reshape(self.extreme.shape), x.shape) * share


class StdFromVar(Function):
    """out = sqrt(v) for a variance v;  dv = g / (2 out), and 0 where out = 0: a constant
    row has a zero gradient, not NaN (PyTorch's convention for std)"""

    def forward(self, v):
        out = array_module(v).sqrt(v)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        zero = out.array == 0
        safe = where(zero, 1.0, out)
        return where(zero, 0.0, grad / (safe * 2))


@autocast_op("sum")
def sum(x: TensorBase, dim=None, keepdim: bool = False) -> TensorBase:  # noqa: A001
    """The sum over `dim` (an int, a tuple, or None for all dims); keepdim keeps
    the summed dims with size 1. Integers and bools sum to int64, as in PyTorch."""
    dims = normalize_dims(dim, x.ndim, "sum")
    if not x.dtype.is_floating_point:  # bool and integers sum as int64, as in PyTorch
        x = x.to(dtypes.int64)
    return Sum.apply(x, dims=dims, keepdim=keepdim)


def _in_float32(reduction):
    """Run `reduction` on a float16 tensor in float32 and cast its result back."""

    @functools.wraps(reduction)
    def reduce(x, *args, **kwargs):
        if x.dtype is dtypes.float16:
            return reduction(x.to(dtypes.float32), *args, **kwargs).to(dtypes.float16)
        return reduction(x, *args, **kwargs)

    return reduce


@_in_float32
def mean(x: TensorBase, dim=None, keepdim: bool = False) -> TensorBase:
    """The mean over `dim` (an int, a tuple, or None for all dims), for floating dtypes."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(
            f"mean: expected a floating point tensor, got {x.dtype}; use .float() first"
        )
    dims = normalize_dims(dim, x.ndim, "mean")
    return sum(x, dims, keepdim) * (1.0 / _count(x.shape, dims))


def max(x: TensorBase, dim=None, keepdim: bool = False):  # noqa: A001
    """max over all elements, (values, indices) along `dim`, or, given a tensor in place
    of dim, the elementwise maximum of the two (like torch.max)."""
    if isinstance(dim, TensorBase):
        return maximum(x, dim)
    return _extreme(x, dim, keepdim, smallest=False)


def min(x: TensorBase, dim=None, keepdim: bool = False):  # noqa: A001
    """min over all elements, (values, indices) along `dim`, or the elementwise minimum."""
    if isinstance(dim, TensorBase):
        return minimum(x, dim)
    return _extreme(x, dim, keepdim, smallest=True)


def amax(x: TensorBase, dim=None, keepdim: bool = False) -> TensorBase:
    """The largest value over `dim` (an int, a tuple, or None for all dims); the gradient
    is shared equally among tied maxima, as in PyTorch."""
    _check_nonempty(x, "amax")
    return Amax.apply(x, dims=normalize_dims(dim, x.ndim, "amax"), keepdim=keepdim)


def amin(x: TensorBase, dim=None, keepdim: bool = False) -> TensorBase:
    """The smallest value over `dim` (an int, a tuple, or None for all dims); the gradient
    is shared equally among tied minima, as in PyTorch."""
    _check_nonempty(x, "amin")
    return Amax.apply(x, dims=normalize_dims(dim, x.ndim, "amin"), keepdim=keepdim,
                      smallest=True)


def argmax(x: TensorBase, dim=None, keepdim: bool = False) -> TensorBase:
    """The index of the largest value along `dim` (of the flattened tensor for None), int64."""
    return _arg_extreme(x, dim, keepdim, "argmax")


def argmin(x: TensorBase, dim=None, keepdim: bool = False) -> TensorBase:
    """The index of the smallest value along `dim` (of the flattened tensor for None), int64."""
    return _arg_extreme(x, dim, keepdim, "argmin")


@_in_float32
def var(x: TensorBase, dim=None, unbiased: bool = True, keepdim: bool = False,
        correction=None) -> TensorBase:
    """sum((x - mean)^2) / (N - correction); correction defaults to 1 (unbiased)."""
    if correction is None:
        correction = 1 if unbiased else 0
    dims = normalize_dims(dim, x.ndim, "var")
    centered = x - mean(x, dims, keepdim=True)
    denominator = _count(x.shape, dims) - correction
    return sum(centered * centered, dims, keepdim) * (1.0 / denominator if denominator > 0
                                                     else math.inf)


@_in_float32
def std(x: TensorBase, dim=None, unbiased: bool = True, keepdim: bool = False,
        correction=None) -> TensorBase:
    """sqrt(var(x)): the standard deviation over `dim`, with Bessel's correction unless
    unbiased=False (or `correction` says otherwise)."""
    return StdFromVar.apply(var(x, dim, unbiased, keepdim, correction))


@autocast_op("logsumexp")
@_in_float32
def logsumexp(x: TensorBase, dim, keepdim: bool = False) -> TensorBase:
    """log(sum(exp(x))) computed as m + log(sum(exp(x - m))), m = max (0 if -inf)."""
    dims = normalize_dims(dim, x.ndim, "logsumexp")
    xp = x.xp
    shift = x.array.max(axis=dims, keepdims=True)
    shift = x._wrap(xp.where(xp.isfinite(shift), shift, 0).astype(x.array.dtype))
    out = sum((x - shift).exp(), dims, keepdim=True).log() + shift
    return out if keepdim else out.reshape(*_reduced_shape(x.shape, dims))


def _extreme(x: TensorBase, dim, keepdim: bool, smallest: bool):
    op = "min" if smallest else "max"
    _check_nonempty(x, op)
    if dim is None:
        return Amax.apply(x, dims=None, keepdim=False, smallest=smallest)
    axis = normalize_dim(dim, x.ndim, op)
    indices = _arg_extreme(x, axis, keepdim, "argmin" if smallest else "argmax")
    if x.ndim == 0:
        return MaxResult(x, indices)
    # gather at the returned index, so that on ties the gradient goes to that one element
    # (as in PyTorch); amax and the full reduction share it among the ties instead
    xp = x.xp
    kept = indices.array if keepdim else xp.expand_dims(indices.array, axis)
    index = tuple(
        kept if d == axis else xp.arange(n).reshape([-1 if i == d else 1 for i in range(x.ndim)])
        for d, n in enumerate(x.shape)
    )
    values = x[index]
    return MaxResult(values if keepdim else values.squeeze(axis), indices)


def _arg_extreme(x: TensorBase, dim, keepdim: bool, op: str) -> TensorBase:
    _check_nonempty(x, op)
    xp = x.xp
    if dim is None:
        index = getattr(xp, op)(x.array.reshape(-1))
        shape = (1,) * x.ndim if keepdim else ()
        return x._wrap(xp.asarray(index, dtype=xp.int64).reshape(shape))
    axis = normalize_dim(dim, x.ndim, op)
    index = getattr(xp, op)(x.array, axis=axis, keepdims=keepdim)
    return x._wrap(xp.asarray(index, dtype=xp.int64))  # 0-d gives a scalar


def _check_nonempty(x: TensorBase, op: str) -> None:
    if x.array.size == 0:
        raise RuntimeError(f"{op}: expected a non-empty tensor, got shape {tuple(x.shape)}")


def _kept_shape(shape: tuple, dims) -> tuple:
    if dims is None:
        return (1,) * len(shape)
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def _reduced_shape(shape: tuple, dims) -> tuple:
    if dims is None:
        return ()
    return tuple(n for i, n in enumerate(shape) if i not in dims)


def _count(shape: tuple, dims) -> int:
    if dims is None:
        return math.prod(shape)
    return math.prod(shape[d] for d in dims)
