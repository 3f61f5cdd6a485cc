"""LayerNorm: normalise over the trailing dims, then a learned scale and shift."""
from __future__ import annotations

import numbers

from minigrad import creation
from minigrad.nn.functional.normalization import layer_norm
from minigrad.nn.module import Module
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
