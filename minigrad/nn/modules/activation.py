"""Activation layers (no parameters; each calls its nn.functional twin). Constructor
arguments, defaults and reprs are PyTorch's; `inplace` is accepted for ported code but
the layer always returns a new tensor (see nn.functional.activation)."""
from __future__ import annotations

from minigrad.nn.functional import activation as F
from minigrad.nn.modules.module import Module
from minigrad.nn.modules.multihead_attention import MultiheadAttention
from minigrad.tensor import Tensor

# PyTorch keeps MultiheadAttention among the activations; it is defined in its own file
__all__ = ["ELU", "GELU", "LeakyReLU", "LogSigmoid", "LogSoftmax", "Mish", "MultiheadAttention",
           "ReLU", "SiLU", "Sigmoid", "Softmax", "Softplus", "Tanh"]


class _InplaceFlag(Module):
    """An activation with PyTorch's `inplace` argument, shown in its repr when set."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def _inplace_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_InplaceFlag):
    """max(x, 0)"""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.relu(input)

    def extra_repr(self) -> str:
        return self._inplace_repr()


class LeakyReLU(_InplaceFlag):
    """x if x > 0 else negative_slope * x"""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.negative_slope = negative_slope

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return ", ".join(filter(None, [f"negative_slope={self.negative_slope}",
                                       self._inplace_repr()]))


class ELU(_InplaceFlag):
    """x if x > 0 else alpha * (e^x - 1)"""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return ", ".join(filter(None, [f"alpha={self.alpha}", self._inplace_repr()]))


class SiLU(_InplaceFlag):
    """x * sigmoid(x)"""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.silu(input)

    def extra_repr(self) -> str:
        return self._inplace_repr()


class Mish(_InplaceFlag):
    """x * tanh(softplus(x))"""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.mish(input)

    def extra_repr(self) -> str:
        return self._inplace_repr()


class GELU(Module):
    """x * Phi(x); approximate="tanh" for the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """ln(1 + e^(beta x)) / beta, linear where beta * x > threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Sigmoid(Module):
    """1 / (1 + e^-x)"""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.sigmoid(input)


class LogSigmoid(Module):
    """ln sigmoid(x)"""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.logsigmoid(input)


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.tanh(input)


class _AlongDim(Module):
    """A normalisation along one dim: softmax or log_softmax."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    """softmax along dim (see F.softmax for dim=None)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softmax(input, self.dim)


class LogSoftmax(_AlongDim):
    """log_softmax along dim."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.log_softmax(input, self.dim)
