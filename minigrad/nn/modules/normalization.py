"""Normalisation layers over the trailing dims or channel groups, as PyTorch's
normalization.py: LayerNorm, GroupNorm and RMSNorm (the functions are F.layer_norm,
F.group_norm and F.rms_norm)."""
from __future__ import annotations

import numbers

from minigrad import creation
from minigrad.nn import init
from minigrad.nn.functional.group_norm import group_norm
from minigrad.nn.functional.normalization import layer_norm
from minigrad.nn.functional.rms_norm import rms_norm
from minigrad.nn.modules.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor


class LayerNorm(Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over `normalized_shape`; weight
    starts at ones and bias at zeros (both absent with elementwise_affine=False)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if not isinstance(normalized_shape, (tuple, list)):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(creation.as_size(n, "LayerNorm", "normalized_shape")
                                      for n in normalized_shape)
        if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
            raise TypeError(f"LayerNorm: eps must be a number, got {eps!r}")
        if not eps >= 0:
            raise ValueError(f"LayerNorm: eps must be non-negative, got {eps}")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype,
                                                  device=device))
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = Parameter(creation.zeros(self.normalized_shape, dtype=dtype,
                                                 device=device))
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


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


class RMSNorm(Module):
    """y = x / sqrt(mean(x^2) + eps) * weight over the trailing dims normalized_shape;
    weight starts at ones (absent with elementwise_affine=False); eps=None uses the
    input dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(creation.as_size(n, "RMSNorm", "normalized_shape")
                                      for n in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype,
                                                  device=device))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
