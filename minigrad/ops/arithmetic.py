"""+ - * / ** and negation. Broadcast inputs get full-shaped gradients here; the engine
sums them back to each input's shape."""
from __future__ import annotations

from minigrad import dtypes
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.kernels.power import power
from minigrad.ops.operands import binary_operands
from minigrad.ops.select import where
from minigrad.tensor_base import TensorBase


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
        return power(a, exponent)

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
        out = power(a, b)
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


def _log_where_nonzero(a: TensorBase, out: TensorBase) -> TensorBase:
    nonzero = out != 0
    return where(nonzero, where(nonzero, a, 1.0).log(), 0.0)


def add(a, b, *, alpha=1) -> TensorBase:
    """a + alpha * b, with PyTorch's type promotion."""
    if alpha != 1:
        b = b * alpha
    return Add.apply(*binary_operands(a, b))


def sub(a, b, *, alpha=1) -> TensorBase:
    """a - alpha * b, with PyTorch's type promotion."""
    if alpha != 1:
        b = b * alpha
    return Sub.apply(*binary_operands(a, b))


def mul(a, b) -> TensorBase:
    """a * b, with PyTorch's type promotion."""
    return Mul.apply(*binary_operands(a, b))


def div(a, b, *, rounding_mode: str | None = None) -> TensorBase:
    """a / b: true division (integers give the default float), or rounded with
    rounding_mode "trunc" (towards zero) or "floor" (towards -inf), which keeps integer
    dtypes and, as in PyTorch, has a zero gradient (the result is outside the graph)."""
    a, b = binary_operands(a, b)
    if rounding_mode is not None:
        return _rounded_division(a, b, rounding_mode)
    if not a.dtype.is_floating_point:  # true division of integers gives the default float
        a, b = a.to(dtypes.float32), b.to(dtypes.float32)
    return Div.apply(a, b)


def floor_divide(a, b) -> TensorBase:
    """a // b, rounded towards -inf (PyTorch's floor_divide and `//`)."""
    return div(a, b, rounding_mode="floor")


def _rounded_division(a: TensorBase, b: TensorBase, rounding_mode: str) -> TensorBase:
    xp = a.xp
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(
            f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
        )
    if a.dtype.is_floating_point:
        quotient = a.array / b.array
        rounded = xp.floor(quotient) if rounding_mode == "floor" else xp.trunc(quotient)
        return a._wrap(xp.asarray(rounded, dtype=a.array.dtype))
    if a.dtype.name == "bool" or bool((b.array == 0).any()):
        raise RuntimeError(
            f"div: integer division by zero (or of bool tensors), shapes {tuple(a.shape)} "
            f"and {tuple(b.shape)}"
        )
    floored = xp.floor_divide(a.array, b.array)
    if rounding_mode == "trunc":  # floor differs from trunc where the exact quotient < 0
        floored = floored + ((floored < 0) & (floored * b.array != a.array))
    return a._wrap(xp.asarray(floored))


def neg(a: TensorBase) -> TensorBase:
    """-a, elementwise."""
    return Neg.apply(a)


@autocast_op("square")
def square(a: TensorBase) -> TensorBase:
    """a * a"""
    return mul(a, a)


@autocast_op("pow")
def pow(a, exponent) -> TensorBase:  # noqa: A001  (torch's name)
    """a ** exponent; a Python-number exponent is a constant of the op."""
    if isinstance(a, TensorBase) and isinstance(exponent, (int, float)) and not isinstance(
        exponent, bool
    ):
        if not a.dtype.is_floating_point and (isinstance(exponent, float) or exponent < 0):
            a = a.to(dtypes.float32)
        return PowScalar.apply(a, exponent=exponent)
    a, b = binary_operands(a, exponent)
    return Pow.apply(a, b)
