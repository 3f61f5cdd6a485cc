"""Activation functions that need a gradient rule of their own: softplus (a stable form
that never overflows), leaky_relu and elu (piecewise, with the kink's side chosen as
PyTorch chooses it). Compositions of existing ops (silu, mish) live in nn.functional."""
from __future__ import annotations

from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.ops.select import where
from minigrad.ops.unary import as_floating, mask_like, sigmoid
from minigrad.tensor_base import TensorBase


class SoftplusFunction(Function):
    """out = ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|);  dx = g * sigmoid(x)"""

    def forward(self, x):
        xp = array_module(x)
        self.save_for_backward(x)
        # e^-|x| <= 1, so neither the exponential nor the sum can overflow
        return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))

    def backward(self, grad):
        (x,) = self.saved
        return grad * sigmoid(x)


class LeakyRelu(Function):
    """out = x if x > 0 else slope * x;  dx = g if x > 0 else g * slope  (slope at 0)"""

    def forward(self, x, negative_slope=0.01):
        xp = array_module(x)
        self.negative_slope = negative_slope
        self.save_for_backward(x)
        return xp.where(x > 0, x, x * negative_slope)

    def backward(self, grad):
        (x,) = self.saved
        positive = x.array > 0
        factor = x.xp.where(positive, 1.0, self.negative_slope)
        return grad * mask_like(factor, grad)


class Elu(Function):
    """out = x if x > 0 else alpha * (e^x - 1);  dx = g if x > 0 else g * (out + alpha)"""

    def forward(self, x, alpha=1.0):
        xp = array_module(x)
        self.alpha = alpha
        out = xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, 0))).astype(x.dtype, copy=False)
        self.save_for_backward(x, out)
        return out

    def backward(self, grad):
        x, out = self.saved
        # out + alpha = alpha e^x on the negative side: the output carries the slope
        return grad * where(x.array > 0, 1.0, out + self.alpha)


def softplus(x: TensorBase) -> TensorBase:
    """ln(1 + e^x), exact for every x (no linear threshold; see F.softplus for that)."""
    return SoftplusFunction.apply(as_floating(x))


def leaky_relu(x: TensorBase, negative_slope: float = 0.01) -> TensorBase:
    return LeakyRelu.apply(as_floating(x), negative_slope=float(negative_slope))


def elu(x: TensorBase, alpha: float = 1.0) -> TensorBase:
    return Elu.apply(as_floating(x), alpha=float(alpha))
