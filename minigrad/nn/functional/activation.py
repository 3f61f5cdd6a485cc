"""Activations with PyTorch's functional names and arguments. Each is an op of minigrad.ops
or a short composition of ops (silu, mish, logsigmoid, softplus's linear threshold).

`inplace=True` is accepted so that ported code runs, but the result is always a new
tensor: minigrad never overwrites a tensor that may be part of a graph."""
from __future__ import annotations

import warnings

from minigrad import dtypes, ops
from minigrad.amp.cast_policy import autocast_op
from minigrad.ops import activation as activation_ops
from minigrad.tensor import Tensor


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002  (torch's name)
    """max(x, 0)"""
    return ops.relu(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01,  # noqa: A002
               inplace: bool = False) -> Tensor:
    """x if x > 0 else negative_slope * x"""
    return activation_ops.leaky_relu(input, negative_slope)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """x if x > 0 else alpha * (e^x - 1)"""
    return activation_ops.elu(input, alpha)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """x * Phi(x) (exact, erf form) or its tanh approximation with approximate="tanh"."""
    return ops.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x * sigmoid(x) (also called swish)."""
    return input * ops.sigmoid(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x * tanh(softplus(x))"""
    return input * ops.tanh(activation_ops.softplus(input))


@autocast_op("softplus")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """ln(1 + e^(beta x)) / beta, and x itself where beta * x > threshold (PyTorch's
    switch to the linear asymptote; the two differ there by less than e^-threshold)."""
    scaled = input if beta == 1 else input * beta
    smooth = activation_ops.softplus(scaled)
    if beta != 1:
        smooth = smooth / beta
    return ops.where(scaled > threshold, input, smooth)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """ln sigmoid(x) = -softplus(-x), finite for every x."""
    return -activation_ops.softplus(-input)


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """1 / (1 + e^-x)"""
    return ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    return ops.tanh(input)


@autocast_op("softmax")
def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:  # noqa: A002
    """exp(x) / sum(exp(x)) along dim; an all -inf slice gives zeros. Without dim,
    PyTorch's legacy choice (dim 0 for 0-, 1- and 3-d inputs, else 1) with a warning."""
    return ops.softmax(_cast(input, dtype), _softmax_dim(input, dim, "softmax"))


@autocast_op("log_softmax")
def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:  # noqa: A002
    """x - logsumexp(x) along dim (dim as in softmax)."""
    return ops.log_softmax(_cast(input, dtype), _softmax_dim(input, dim, "log_softmax"))


def _softmax_dim(x: Tensor, dim: int | None, op: str) -> int:
    if dim is not None:
        return dim
    implicit = 0 if x.ndim in (0, 1, 3) else 1
    warnings.warn(f"{op}: implicit dimension choice is deprecated (as in PyTorch); pass dim "
                  f"(chose dim={implicit} for a {x.ndim}-d input)", UserWarning, stacklevel=3)
    return implicit


def _cast(x: Tensor, dtype) -> Tensor:
    return x if dtype is None else x.to(dtypes.as_dtype(dtype))
