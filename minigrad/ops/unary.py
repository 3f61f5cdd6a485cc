"""Elementwise functions of one tensor. Backward rules reuse the forward output where
that is cheaper (exp, sqrt, tanh, sigmoid)."""
from __future__ import annotations

import math

from minigrad import dtypes
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.kernels.erf import erf as _erf_array
from minigrad.tensor_base import TensorBase


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
        return grad * x._wrap(x.xp.sign(x.array))


class TanhFunction(Function):
    """out = tanh x;  dx = g * (1 - out^2)"""

    def forward(self, x):
        out = array_module(x).tanh(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * (1 - out * out)


class SigmoidFunction(Function):
    """out = 1 / (1 + e^-x);  dx = g * out * (1 - out)"""

    def forward(self, x):
        xp = array_module(x)
        # e^-|x| never overflows; 1 / (1 + e) for x >= 0, e / (1 + e) below, the numerator
        # picked by a maximum (e <= 1): a where would branch on every element, 4x slower
        e = xp.exp(-xp.abs(x))
        out = xp.maximum(e, x >= 0) / (1 + e)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * out * (1 - out)


class Relu(Function):
    """out = max(x, 0);  dx = g * (x > 0)"""

    def forward(self, x):
        xp = array_module(x)
        # NumPy's clip with both bounds is a vector loop, 2.5x faster than a maximum with a
        # scalar (and keeps -0, as PyTorch does)
        out = xp.clip(x, 0, xp.inf) if x.dtype.kind == "f" else xp.maximum(x, 0)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * mask_like(out.array > 0, grad)


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
        xp = array_module(x)
        if x.dtype.kind == "f":  # NumPy's clip is a vector loop only with both bounds
            low = -xp.inf if low is None else low
            high = xp.inf if high is None else high
        return xp.clip(x, low, high)

    def backward(self, grad):
        (x,) = self.saved
        inside = x.xp.ones(x.shape, dtype=bool)
        if self.low is not None:
            inside &= x.array >= self.low
        if self.high is not None:
            inside &= x.array <= self.high
        return grad * mask_like(inside, grad)


@autocast_op("exp")
def exp(x: TensorBase) -> TensorBase:
    """e ** x, elementwise."""
    return Exp.apply(as_floating(x))


@autocast_op("log")
def log(x: TensorBase) -> TensorBase:
    """The natural logarithm, elementwise."""
    return Log.apply(as_floating(x))


def sqrt(x: TensorBase) -> TensorBase:
    """The square root, elementwise."""
    return Sqrt.apply(as_floating(x))


@autocast_op("rsqrt")
def rsqrt(x: TensorBase) -> TensorBase:
    """1 / sqrt(x), elementwise."""
    return Rsqrt.apply(as_floating(x))


def abs(x: TensorBase) -> TensorBase:  # noqa: A001
    """|x|, elementwise (gradient sign(x), 0 at 0)."""
    return Abs.apply(x)


def tanh(x: TensorBase) -> TensorBase:
    """tanh(x), elementwise."""
    return TanhFunction.apply(as_floating(x))


def sigmoid(x: TensorBase) -> TensorBase:
    """1 / (1 + exp(-x)), elementwise."""
    return SigmoidFunction.apply(as_floating(x))


def relu(x: TensorBase) -> TensorBase:
    """max(x, 0), elementwise (gradient 0 at 0)."""
    return Relu.apply(x)


def sin(x: TensorBase) -> TensorBase:
    """sin(x), elementwise."""
    return Sin.apply(as_floating(x))


def cos(x: TensorBase) -> TensorBase:
    """cos(x), elementwise."""
    return Cos.apply(as_floating(x))


def erf(x: TensorBase) -> TensorBase:
    """The error function 2/sqrt(pi) * integral from 0 to x of exp(-t^2) dt, elementwise."""
    return Erf.apply(as_floating(x))


def gelu(x: TensorBase, approximate: str = "none") -> TensorBase:
    """GELU: exact x * Phi(x) by default; approximate="tanh" uses
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate == "none":
        return Gelu.apply(as_floating(x))
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)
        return x * (inner.tanh() + 1) * 0.5
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def clamp(x: TensorBase, min=None, max=None) -> TensorBase:  # noqa: A002
    """x limited to [min, max] elementwise (either bound may be None); the gradient flows
    where x is inside the bounds."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    return Clamp.apply(x, low=min, high=max)


def mask_like(mask, grad: TensorBase) -> TensorBase:
    """A bool mask as a constant tensor of grad's dtype (no cast op in the graph)."""
    return grad._wrap(mask.astype(grad.array.dtype))


def as_floating(x: TensorBase) -> TensorBase:
    """Integer inputs of transcendental functions become the default float, as in torch."""
    if x.dtype.is_floating_point:
        return x
    return x.to(dtypes.float32)
