"""Dropout layer: active in training mode, the identity after eval()."""
from __future__ import annotations

import numbers

from minigrad.nn.functional.dropout import dropout
from minigrad.nn.modules.module import Module
from minigrad.tensor import Tensor


class Dropout(Module):
    """Zero elements with probability p during training, scaling the rest by 1/(1-p).
    `inplace` is accepted for ported code; the result is always a new tensor."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, numbers.Real):
            raise TypeError(f"Dropout: p must be a number, got {p!r}")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: probability must be in [0, 1], got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
