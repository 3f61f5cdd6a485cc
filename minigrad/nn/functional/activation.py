"""Activations: relu, gelu, softmax, log_softmax (thin names over minigrad.ops)."""
from __future__ import annotations

from minigrad import dtypes, ops
from minigrad.tensor import Tensor


def relu(input: Tensor) -> Tensor:  # noqa: A002  (torch's argument name)
    """max(x, 0)"""
    return ops.relu(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """x * Phi(x) (exact, erf form) or its tanh approximation with approximate="tanh"."""
    return ops.gelu(input, approximate)


def softmax(input: Tensor, dim: int = -1, dtype=None) -> Tensor:  # noqa: A002
    """exp(x) / sum(exp(x)) along dim; an all -inf slice gives zeros."""
    return ops.softmax(_cast(input, dtype), dim)


def log_softmax(input: Tensor, dim: int = -1, dtype=None) -> Tensor:  # noqa: A002
    """x - logsumexp(x) along dim."""
    return ops.log_softmax(_cast(input, dtype), dim)


def _cast(x: Tensor, dtype) -> Tensor:
    return x if dtype is None else x.to(dtypes.as_dtype(dtype))
