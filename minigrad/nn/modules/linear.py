"""Linear: y = x @ W^T + b, initialised as in PyTorch; and Identity, the placeholder layer
(PyTorch keeps both here)."""
from __future__ import annotations

from minigrad import creation
from minigrad.nn import init
from minigrad.nn.functional.linear import linear
from minigrad.nn.modules.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor


class Identity(Module):
    """Returns its input; ignores any constructor arguments (a placeholder layer)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input


class Linear(Module):
    """weight (out_features, in_features) ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's
    kaiming_uniform_ with a = sqrt(5)); bias (out_features,) from the same range."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = creation.as_size(in_features, "Linear", "in_features")
        self.out_features = creation.as_size(out_features, "Linear", "out_features")
        self.weight = Parameter(creation.zeros(self.out_features, self.in_features,
                                               dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(creation.zeros(self.out_features, dtype=dtype,
                                                 device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.layer_defaults_(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")
