"""Rounding and remainders: sign, round, floor, ceil, fmod and remainder.

sign, round, floor and ceil are step functions: their derivative is 0 wherever it exists,
and PyTorch gives a zero gradient at the jumps too. Integer inputs come back unchanged (a
copy) from round, floor and ceil, and keep their dtype in sign, fmod and remainder.
"""
from __future__ import annotations

from minigrad import dtypes
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.ops.arithmetic import div
from minigrad.ops.operands import binary_operands
from minigrad.ops.shape import clone
from minigrad.tensor_base import TensorBase


class _StepFunction(Function):
    """An elementwise step function: dx = 0 (a constant, so second derivatives are 0)."""

    def backward(self, grad):
        return grad._wrap(grad.xp.zeros_like(grad.array))


class Sign(_StepFunction):
    """out = -1, 0 or 1 by the sign of x;  dx = 0"""

    def forward(self, x):
        return array_module(x).sign(x)


class Round(_StepFunction):
    """out = x rounded to `decimals` decimal places, halves to even: rint(x * 10^d) / 10^d
    (rint(x / 10^-d) * 10^-d for d < 0);  dx = 0"""

    def forward(self, x, decimals=0):
        xp = array_module(x)
        if decimals == 0:
            return xp.rint(x)
        if decimals > 0:
            scale = 10.0**decimals
            return xp.rint(x * scale) / scale
        scale = 10.0**-decimals
        return xp.rint(x / scale) * scale


class Floor(_StepFunction):
    """out = the largest integer <= x;  dx = 0"""

    def forward(self, x):
        return array_module(x).floor(x)


class Ceil(_StepFunction):
    """out = the smallest integer >= x;  dx = 0"""

    def forward(self, x):
        return array_module(x).ceil(x)


class _Modulo(Function):
    """out = a - q * b for a quotient q rounded by `rounding_mode`;
    da = g,  db = -g * q  (q is a step function of a and b: its own derivative is 0)"""

    rounding_mode = ""

    def backward(self, grad):
        a, b = self.saved
        grad_b = None
        if self.needs_input_grad[1]:
            grad_b = -grad * div(a, b, rounding_mode=self.rounding_mode)
        return grad, grad_b


class Fmod(_Modulo):
    """out = a - trunc(a / b) * b: C's fmod, with the sign of a"""

    rounding_mode = "trunc"

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return array_module(a).fmod(a, b)


class Remainder(_Modulo):
    """out = a - floor(a / b) * b: Python's %, with the sign of b"""

    rounding_mode = "floor"

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return array_module(a).remainder(a, b)


def sign(x: TensorBase) -> TensorBase:
    """-1, 0 or 1 by the sign of each element (a bool tensor is its own sign)."""
    if x.dtype is dtypes.bool_:
        return clone(x)
    return Sign.apply(x)


def round(x: TensorBase, *, decimals: int = 0) -> TensorBase:  # noqa: A001  (torch's name)
    """Each element rounded to `decimals` decimal places (negative: to tens, hundreds...),
    halves to the even neighbour, as in PyTorch and NumPy."""
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round: decimals must be an int, got {decimals!r}")
    if not _float_or_integer(x, "round").is_floating_point:
        if decimals != 0:
            raise NotImplementedError(
                f"round: decimals={decimals} is not implemented for {x.dtype} tensors "
                "(expected a floating point tensor)")
        return clone(x)
    return Round.apply(x, decimals=decimals)


def floor(x: TensorBase) -> TensorBase:
    """The largest integer <= each element (integer tensors are returned as a copy)."""
    if not _float_or_integer(x, "floor").is_floating_point:
        return clone(x)
    return Floor.apply(x)


def ceil(x: TensorBase) -> TensorBase:
    """The smallest integer >= each element (integer tensors are returned as a copy)."""
    if not _float_or_integer(x, "ceil").is_floating_point:
        return clone(x)
    return Ceil.apply(x)


def fmod(a, b) -> TensorBase:
    """a - trunc(a / b) * b, elementwise with broadcasting: the remainder with the sign
    of a (C's fmod). Integer division by zero raises; float gives NaN."""
    a, b = _modulo_operands(a, b, "fmod")
    return Fmod.apply(a, b)


def remainder(a, b) -> TensorBase:
    """a - floor(a / b) * b, elementwise with broadcasting: the remainder with the sign
    of b (Python's %). Integer division by zero raises; float gives NaN."""
    a, b = _modulo_operands(a, b, "remainder")
    return Remainder.apply(a, b)


def _float_or_integer(x: TensorBase, op: str) -> dtypes.dtype:
    if x.dtype is dtypes.bool_:
        raise NotImplementedError(
            f"{op}: not implemented for bool tensors (shape {tuple(x.shape)}); convert "
            "with .long() or .float() first")
    return x.dtype


def _modulo_operands(a, b, op: str) -> tuple[TensorBase, TensorBase]:
    a, b = binary_operands(a, b)
    if not _float_or_integer(a, op).is_floating_point and bool((b.array == 0).any()):
        raise RuntimeError(
            f"{op}: integer division by zero (operands of shapes {tuple(a.shape)} and "
            f"{tuple(b.shape)}, {a.dtype})")
    return a, b
