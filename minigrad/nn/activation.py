"""Activation layers: ReLU, GELU, Softmax (no parameters; they call nn.functional)."""
from __future__ import annotations

from minigrad.nn.functional.activation import gelu, relu, softmax
from minigrad.nn.module import Module
from minigrad.tensor import Tensor


class ReLU(Module):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return relu(input)


class GELU(Module):
    """x * Phi(x); approximate="tanh" for the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate='{self.approximate}'" if self.approximate != "none" else ""


class Softmax(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
