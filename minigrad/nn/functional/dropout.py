"""Inverted dropout: zero each element with probability p and scale the survivors by
1 / (1 - p), so the expected value is unchanged and evaluation needs no rescaling."""
from __future__ import annotations

from minigrad import random
from minigrad.ops.dropout import MaskedScale
from minigrad.tensor import Tensor


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:  # noqa: A002
    """out = x * mask / (1 - p), mask ~ Bernoulli(1 - p) drawn from minigrad's RNG;
    the identity when not training or p == 0."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = random.bernoulli(input.shape, 1.0 - p, input.device)
    return MaskedScale.apply(input, mask=keep, scale=1.0 / (1.0 - p))
