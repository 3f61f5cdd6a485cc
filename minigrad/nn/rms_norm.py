"""RMSNorm: PyTorch's module (see F.rms_norm)."""
from __future__ import annotations

from minigrad import creation
from minigrad.nn import init
from minigrad.nn.functional.rms_norm import rms_norm
from minigrad.nn.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor


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
