"""Elementwise functions of one tensor. Backward rules reuse the forward output where
that is cheaper (exp, sqrt, tanh, sigmoid)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from minigrad import dtypes
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.backend.special import erf as _erf_array

if TYPE_CHECKING:
    from minigrad.tensor import Tensor


class Exp(Function):
    """out = e^x;  dx = g * out"""

    def forward(self, x):
        out = array_module(x).exp(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * out


class Log(Function):
    """out = ln x;  dx = g / x"""

    def forward(self, x):
        self.save_for_backward(x)
        return array_module(x).log(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad / x


class Sqrt(Function):
    """out = sqrt(x);  dx = g / (2 out)"""

    def forward(self, x):
        out = array_module(x).sqrt(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad / (out * 2)


class Rsqrt(Function):
    """out = 1 / sqrt(x);  dx = -g * out^3 / 2"""

    def forward(self, x):
        out = 1 / array_module(x).sqrt(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * out * out * out * -0.5


class Abs(Function):
    """out = |x|;  dx = g * sign(x)  (0 at x = 0, as in PyTorch)"""

    def forward(self, x):
        self.save_for_backward(x)
        return array_module(x).abs(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * x._wrap(x.xp.sign(x.data))


class Tanh(Function):
    """out = tanh x;  dx = g * (1 - out^2)"""

    def forward(self, x):
        out = array_module(x).tanh(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * (1 - out * out)


class Sigmoid(Function):
    """out = 1 / (1 + e^-x);  dx = g * out * (1 - out)"""

    def forward(self, x):
        xp = array_module(x)
        # e^-|x| never overflows; pick the form that divides by a number >= 1
        e = xp.exp(-xp.abs(x))
        out = xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * out * (1 - out)


class Relu(Function):
    """out = max(x, 0);  dx = g * (x > 0)"""

    def forward(self, x):
        out = array_module(x).maximum(x, 0)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * _mask_like(out.data > 0, grad)


class Sin(Function):
    """out = sin x;  dx = g * cos x"""

    def forward(self, x):
        self.save_for_backward(x)
        return array_module(x).sin(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * cos(x)


class Cos(Function):
    """out = cos x;  dx = -g * sin x"""

    def forward(self, x):
        self.save_for_backward(x)
        return array_module(x).cos(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * -sin(x)


class Erf(Function):
    """out = erf x;  dx = g * 2/sqrt(pi) * e^(-x^2)"""

    def forward(self, x):
        self.save_for_backward(x)
        return _erf_array(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad * (-(x * x)).exp() * (2 / math.sqrt(math.pi))


class Gelu(Function):
    """out = x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2;
    dx = g * (Phi(x) + x * phi(x)), phi(x) = e^(-x^2/2) / sqrt(2 pi)"""

    def forward(self, x):
        self.save_for_backward(x)
        return x * (0.5 * (1 + _erf_array(x * (1 / math.sqrt(2)))))

    def backward(self, grad):
        (x,) = self.saved
        cdf = (erf(x * (1 / math.sqrt(2))) + 1) * 0.5
        pdf = (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
        return grad * (cdf + x * pdf)


class Clamp(Function):
    """out = min(max(x, low), high);  dx = g where low <= x <= high, else 0"""

    def forward(self, x, low=None, high=None):
        self.save_for_backward(x)
        self.low, self.high = low, high
        return array_module(x).clip(x, low, high)

    def backward(self, grad):
        (x,) = self.saved
        inside = x.xp.ones(x.shape, dtype=bool)
        if self.low is not None:
            inside &= x.data >= self.low
        if self.high is not None:
            inside &= x.data <= self.high
        return grad * _mask_like(inside, grad)


def exp(x: Tensor) -> Tensor:
    return Exp.apply(_floating(x))


def log(x: Tensor) -> Tensor:
    return Log.apply(_floating(x))


def sqrt(x: Tensor) -> Tensor:
    return Sqrt.apply(_floating(x))


def rsqrt(x: Tensor) -> Tensor:
    return Rsqrt.apply(_floating(x))


def abs(x: Tensor) -> Tensor:  # noqa: A001
    return Abs.apply(x)


def tanh(x: Tensor) -> Tensor:
    return Tanh.apply(_floating(x))


def sigmoid(x: Tensor) -> Tensor:
    return Sigmoid.apply(_floating(x))


def relu(x: Tensor) -> Tensor:
    return Relu.apply(x)


def sin(x: Tensor) -> Tensor:
    return Sin.apply(_floating(x))


def cos(x: Tensor) -> Tensor:
    return Cos.apply(_floating(x))


def erf(x: Tensor) -> Tensor:
    return Erf.apply(_floating(x))


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU: exact x * Phi(x) by default; approximate="tanh" uses
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate == "none":
        return Gelu.apply(_floating(x))
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)
        return x * (inner.tanh() + 1) * 0.5
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def clamp(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    return Clamp.apply(x, low=min, high=max)


def _mask_like(mask, grad: Tensor) -> Tensor:
    """A bool mask as a constant tensor of grad's dtype (no cast op in the graph)."""
    return grad._wrap(mask.astype(grad.data.dtype))


def _floating(x: Tensor) -> Tensor:
    """Integer inputs of transcendental functions become the default float, as in torch."""
    if x.dtype.is_floating_point:
        return x
    return x.to(dtypes.float32)
