"""GroupNorm: PyTorch's module (see F.group_norm)."""
from __future__ import annotations

from minigrad import creation
from minigrad.nn import init
from minigrad.nn.functional.group_norm import group_norm
from minigrad.nn.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor


class GroupNorm(Module):
    """Normalises num_channels channels in num_groups groups; with affine, a per-channel
    weight (ones) and bias (zeros; bias=False leaves it out)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        num_groups = creation.as_size(num_groups, "GroupNorm", "num_groups")
        num_channels = creation.as_size(num_channels, "GroupNorm", "num_channels")
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by "
                             f"num_groups={num_groups}")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        self.register_parameter("weight", Parameter(
            creation.ones(num_channels, dtype=dtype, device=device)) if affine else None)
        self.register_parameter("bias", Parameter(
            creation.zeros(num_channels, dtype=dtype, device=device)) if affine and bias else None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")
