"""More elementwise math PyTorch programs use: log1p and expm1 (accurate near 0), atan2
and hypot of two tensors, lerp, and clamp_min / clamp_max (a bound that may be a tensor),
with the in-place forms lerp_, clamp_min_ and clamp_max_."""
from __future__ import annotations

from minigrad import dtypes
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.ops.in_place import in_place_form
from minigrad.ops.operands import as_tensor_like, binary_operands
from minigrad.ops.select import where
from minigrad.ops.unary import as_floating, clamp
from minigrad.tensor_base import TensorBase


class Log1p(Function):
    """out = ln(1 + x), exact for tiny x;  dx = g / (1 + x)"""

    def forward(self, x):
        self.save_for_backward(x)
        return array_module(x).log1p(x)

    def backward(self, grad):
        (x,) = self.saved
        return grad / (x + 1)


class Expm1(Function):
    """out = e^x - 1, exact for tiny x;  dx = g * (out + 1)"""

    def forward(self, x):
        out = array_module(x).expm1(x)
        self.save_for_backward(out)
        return out

    def backward(self, grad):
        (out,) = self.saved
        return grad * (out + 1)


class Atan2(Function):
    """out = atan2(a, b), the angle of the point (b, a) in (-pi, pi];
    da = g b / (a^2 + b^2),  db = -g a / (a^2 + b^2)  (NaN at the origin, as in PyTorch)"""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return array_module(a).arctan2(a, b)

    def backward(self, grad):
        a, b = self.saved
        scale = grad / (a * a + b * b)
        grad_a = scale * b if self.needs_input_grad[0] else None
        grad_b = -scale * a if self.needs_input_grad[1] else None
        return grad_a, grad_b


class Hypot(Function):
    """out = sqrt(a^2 + b^2), without overflow in the squares;
    da = g a / out,  db = g b / out  (NaN at the origin, as in PyTorch)"""

    def forward(self, a, b):
        out = array_module(a).hypot(a, b)
        self.save_for_backward(a, b, out)
        return out

    def backward(self, grad):
        a, b, out = self.saved
        scale = grad / out
        grad_a = scale * a if self.needs_input_grad[0] else None
        grad_b = scale * b if self.needs_input_grad[1] else None
        return grad_a, grad_b


class Lerp(Function):
    """out = start + weight * (end - start), computed from the nearer end so that
    weight 0 gives start and weight 1 gives end exactly;
    dstart = g (1 - weight),  dend = g weight,  dweight = g (end - start)"""

    def forward(self, start, end, weight):
        self.save_for_backward(start, end, weight)
        xp = array_module(start)
        difference = end - start
        near_start = start + weight * difference
        near_end = end - difference * (1 - weight)
        return xp.where(xp.abs(weight) < 0.5, near_start, near_end)

    def backward(self, grad):
        start, end, weight = self.saved
        needs_start, needs_end, needs_weight = self.needs_input_grad
        grad_start = grad * (1 - weight) if needs_start else None
        grad_end = grad * weight if needs_end else None
        grad_weight = grad * (end - start) if needs_weight else None
        return grad_start, grad_end, grad_weight


@autocast_op("log1p")
def log1p(x: TensorBase) -> TensorBase:
    """ln(1 + x), accurate where x is tiny (integers become the default float)."""
    return Log1p.apply(as_floating(x))


@autocast_op("expm1")
def expm1(x: TensorBase) -> TensorBase:
    """e^x - 1, accurate where x is tiny (integers become the default float)."""
    return Expm1.apply(as_floating(x))


@autocast_op("atan2")
def atan2(input, other) -> TensorBase:  # noqa: A002  (torch's name)
    """The angle atan(input / other) in the quadrant of the point (other, input), in
    (-pi, pi], elementwise with broadcasting; integers become the default float."""
    a, b = binary_operands(input, other)
    if not a.dtype.is_floating_point:
        a, b = a.to(dtypes.float32), b.to(dtypes.float32)
    return Atan2.apply(a, b)


def hypot(input, other) -> TensorBase:  # noqa: A002
    """sqrt(input^2 + other^2), elementwise with broadcasting (floating point only)."""
    a, b = binary_operands(input, other)
    if not a.dtype.is_floating_point:
        raise NotImplementedError(
            f"hypot: not implemented for {a.dtype} tensors (shapes {tuple(a.shape)} and "
            f"{tuple(b.shape)}); expected floating point")
    return Hypot.apply(a, b)


def lerp(input: TensorBase, end: TensorBase, weight) -> TensorBase:  # noqa: A002
    """input + weight * (end - input): linear interpolation, weight a number or a tensor,
    broadcasting all three. input, end and a tensor weight share one floating dtype."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"lerp: not implemented for {input.dtype} tensors (shape "
            f"{tuple(input.shape)}); expected floating point")
    _check_same_dtype("lerp", input, end=end, weight=weight)
    if not isinstance(weight, TensorBase):
        weight = as_tensor_like(weight, input)
    return Lerp.apply(input, end, weight)


def clamp_min(input: TensorBase, min) -> TensorBase:  # noqa: A002
    """max(input, min) with min a number or a tensor (broadcast), the gradient going to
    input where input >= min and to min elsewhere, as in PyTorch."""
    if _is_float_and_number(input, min):  # clamp's clip: a where branches on each element
        return clamp(input, min=min)
    x, low = binary_operands(input, min)
    return where(x < low, low, x)


def clamp_max(input: TensorBase, max) -> TensorBase:  # noqa: A002
    """min(input, max) with max a number or a tensor (broadcast), the gradient going to
    input where input <= max and to max elsewhere, as in PyTorch."""
    if _is_float_and_number(input, max):
        return clamp(input, max=max)
    x, high = binary_operands(input, max)
    return where(x > high, high, x)


def _is_float_and_number(input: TensorBase, bound) -> bool:  # noqa: A002
    return (input.dtype.is_floating_point and isinstance(bound, (int, float))
            and not isinstance(bound, bool))


lerp_ = in_place_form(lerp, "lerp_")
clamp_min_ = in_place_form(clamp_min, "clamp_min_")
clamp_max_ = in_place_form(clamp_max, "clamp_max_")


def _check_same_dtype(op: str, input: TensorBase, **others) -> None:  # noqa: A002
    for name, other in others.items():
        if isinstance(other, TensorBase) and other.dtype != input.dtype:
            raise RuntimeError(
                f"{op}: expected dtype {input.dtype} for `{name}` (the input's), but got "
                f"{other.dtype} (shapes {tuple(input.shape)} and {tuple(other.shape)})")
