"""softmax and log_softmax along a dim. Forward and backward each call one kernel; the
backward kernels are wrapped as Functions of their own so that the backward rule stays
differentiable (second derivatives)."""
from __future__ import annotations

from minigrad import kernels
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.ops.operands import normalize_dim
from minigrad.tensor_base import TensorBase


class SoftmaxFunction(Function):
    """y = exp(x - max) / sum(exp(x - max)) over the last dim (a fully masked row gives 0)"""

    def forward(self, x):
        y = kernels.softmax(x)
        self.save_for_backward(y)
        return y

    def backward(self, grad):
        (y,) = self.saved
        return SoftmaxBackward.apply(y, grad)


class SoftmaxBackward(Function):
    """dx = y * (g - sum(g * y));
    its own gradients: dg = y * (h - sum(h * y)),  dy = h * (g - sum(g * y)) - g * sum(h * y)"""

    def forward(self, y, g):
        self.save_for_backward(y, g)
        return kernels.softmax_backward(y, g)

    def backward(self, h):
        y, g = self.saved
        grad_y = grad_g = None
        if self.needs_input_grad[1]:
            grad_g = SoftmaxBackward.apply(y, h)
        if self.needs_input_grad[0]:
            grad_y = h * (g - (g * y).sum(-1, keepdim=True)) - g * (h * y).sum(-1, keepdim=True)
        return grad_y, grad_g


class LogSoftmaxFunction(Function):
    """z = x - max - log(sum(exp(x - max))) over the last dim"""

    def forward(self, x):
        z = kernels.log_softmax(x)
        self.save_for_backward(z)
        return z

    def backward(self, grad):
        (z,) = self.saved
        return LogSoftmaxBackward.apply(z, grad)


class LogSoftmaxBackward(Function):
    """dx = g - exp(z) * sum(g);
    its own gradients: dg = h - sum(h * exp(z)),  dz = -h * exp(z) * sum(g)"""

    def forward(self, z, g):
        self.save_for_backward(z, g)
        return kernels.log_softmax_backward(z, g)

    def backward(self, h):
        z, g = self.saved
        p = z.exp()
        grad_z = -h * p * g.sum(-1, keepdim=True) if self.needs_input_grad[0] else None
        grad_g = h - (h * p).sum(-1, keepdim=True) if self.needs_input_grad[1] else None
        return grad_z, grad_g


@autocast_op("softmax")
def softmax(x: TensorBase, dim: int) -> TensorBase:
    """exp(x) / sum(exp(x)) along `dim`, computed without overflow."""
    return _along_last_dim(SoftmaxFunction, x, dim, "softmax")


@autocast_op("log_softmax")
def log_softmax(x: TensorBase, dim: int) -> TensorBase:
    """x - log(sum(exp(x))) along `dim`, computed without overflow."""
    return _along_last_dim(LogSoftmaxFunction, x, dim, "log_softmax")


def _along_last_dim(function, x: TensorBase, dim: int, op: str) -> TensorBase:
    """Kernels work on the last dim: move `dim` there and back."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point tensor, got {x.dtype}")
    if x.ndim == 0:
        return function.apply(x.reshape(1)).reshape(())
    dim = normalize_dim(dim, x.ndim, op)
    if dim == x.ndim - 1:
        return function.apply(x)
    return function.apply(x.transpose(dim, -1)).transpose(dim, -1)
