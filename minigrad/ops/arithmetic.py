"""+ - * / ** and negation. Broadcast inputs get full-shaped gradients here; the engine
sums them back to each input's shape."""
from __future__ import annotations

from typing import TYPE_CHECKING

from minigrad import dtypes
from minigrad.autograd.function import Function
from minigrad.ops.operands import binary_operands
from minigrad.ops.select import where
from minigrad.tensor_base import TensorBase

if TYPE_CHECKING:
    from minigrad.tensor import Tensor


class Add(Function):
    """out = a + b"""

    def forward(self, a, b):
        return a + b

    def backward(self, grad):
        return grad, grad


class Sub(Function):
    """out = a - b"""

    def forward(self, a, b):
        return a - b

    def backward(self, grad):
        return grad, -grad if self.needs_input_grad[1] else None


class Mul(Function):
    """out = a * b"""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a * b

    def backward(self, grad):
        a, b = self.saved
        grad_a = grad * b if self.needs_input_grad[0] else None
        grad_b = grad * a if self.needs_input_grad[1] else None
        return grad_a, grad_b


class Div(Function):
    """out = a / b;  da = g / b,  db = -g * a / b^2"""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a / b

    def backward(self, grad):
        a, b = self.saved
        grad_a = grad / b if self.needs_input_grad[0] else None
        grad_b = -grad * a / (b * b) if self.needs_input_grad[1] else None
        return grad_a, grad_b


class Neg(Function):
    """out = -a"""

    def forward(self, a):
        return -a

    def backward(self, grad):
        return -grad


class PowScalar(Function):
    """out = a ** p for a constant p;  da = g * p * a^(p-1)"""

    def forward(self, a, exponent):
        self.save_for_backward(a)
        self.exponent = exponent
        return a**exponent

    def backward(self, grad):
        (a,) = self.saved
        p = self.exponent
        if p == 0:
            return grad * 0
        if p == 1:
            return grad
        return grad * p * a ** (p - 1)


class Pow(Function):
    """out = a ** b;  da = g * b * a^(b-1),  db = g * out * log(a)"""

    def forward(self, a, b):
        out = a**b
        self.save_for_backward(a, b, out)
        return out

    def backward(self, grad):
        a, b, out = self.saved
        grad_a = grad * b * a ** (b - 1) if self.needs_input_grad[0] else None
        grad_b = None
        if self.needs_input_grad[1]:
            # d(a^b)/db = a^b log a, and 0 where a^b is 0 (the limit as a -> 0+)
            grad_b = grad * out * _log_where_nonzero(a, out)
        return grad_a, grad_b


def _log_where_nonzero(a: Tensor, out: Tensor) -> Tensor:
    nonzero = out != 0
    return where(nonzero, where(nonzero, a, 1.0).log(), 0.0)


def _binary(function: type[Function], name: str):
    """The function users call for a binary op: promote the operands, apply the op."""

    def op(a, b) -> Tensor:
        # two tensors of one dtype (the common case, and every backward rule's) need no
        # promotion, so they skip binary_operands
        if not (isinstance(a, TensorBase) and isinstance(b, TensorBase)
                and a.data.dtype is b.data.dtype):
            a, b = binary_operands(a, b)
        return function.apply(a, b)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{name}(a, b): {function.__doc__.strip()}, with PyTorch's type promotion"
    return op


add = _binary(Add, "add")
sub = _binary(Sub, "sub")
mul = _binary(Mul, "mul")


def div(a, b) -> Tensor:
    a, b = binary_operands(a, b)
    if not a.dtype.is_floating_point:  # true division of integers gives the default float
        a, b = a.to(dtypes.float32), b.to(dtypes.float32)
    return Div.apply(a, b)


def neg(a: Tensor) -> Tensor:
    return Neg.apply(a)


def pow(a, exponent) -> Tensor:  # noqa: A001  (torch's name)
    """a ** exponent; a Python-number exponent is a constant of the op."""
    if isinstance(a, TensorBase) and isinstance(exponent, (int, float)) and not isinstance(
        exponent, bool
    ):
        if not a.dtype.is_floating_point and (isinstance(exponent, float) or exponent < 0):
            a = a.to(dtypes.float32)
        return PowScalar.apply(a, exponent=exponent)
    a, b = binary_operands(a, exponent)
    return Pow.apply(a, b)
