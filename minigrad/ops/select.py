"""Choosing between values: where, masked_fill, maximum/minimum, triu/tril."""
from __future__ import annotations

from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.ops.operands import binary_operands
from minigrad.tensor_base import TensorBase


class Where(Function):
    """out = cond ? a : b;  da = g where cond, db = g where not cond"""

    def forward(self, a, b, condition):
        self.condition = condition
        return array_module(a).where(condition, a, b)

    def backward(self, grad):
        condition = grad._wrap(self.condition)
        grad_a = where(condition, grad, 0.0) if self.needs_input_grad[0] else None
        grad_b = where(condition, 0.0, grad) if self.needs_input_grad[1] else None
        return grad_a, grad_b


class Maximum(Function):
    """out = max(a, b);  the gradient goes to the larger input, split evenly on ties"""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return array_module(a).maximum(a, b)

    def backward(self, grad):
        a, b = self.saved
        share_a = (a.array > b.array) + 0.5 * (a.array == b.array)
        share_a = grad._wrap(share_a.astype(grad.array.dtype, copy=False))
        return grad * share_a, grad * (1 - share_a)


class Triangle(Function):
    """out = x masked to its upper (triu) or lower (tril) triangle of the last two dims"""

    def forward(self, x, diagonal=0, upper=True):
        xp = array_module(x)
        self.diagonal, self.upper = diagonal, upper
        return xp.triu(x, diagonal) if upper else xp.tril(x, diagonal)

    def backward(self, grad):
        return _triangle(grad, self.diagonal, self.upper)


def where(condition, a, b) -> TensorBase:
    """Elementwise `a if condition else b`, broadcasting all three."""
    a, b = binary_operands(a, b)
    condition_array = condition.array if isinstance(condition, TensorBase) else condition
    condition_array = a.xp.asarray(condition_array)
    if condition_array.dtype != bool:
        condition_array = condition_array.astype(bool)
    return Where.apply(a, b, condition=condition_array)


def masked_fill(x: TensorBase, mask, value) -> TensorBase:
    """x with `value` wherever `mask` (broadcast to x) is True."""
    _check_mask(x, mask, "masked_fill")
    if isinstance(value, TensorBase):
        return where(mask, value.to(x.dtype), x)
    return where(mask, x.xp.asarray(value, dtype=x.array.dtype), x)


def maximum(a, b) -> TensorBase:
    """The larger of a and b, elementwise (broadcast, with type promotion)."""
    a, b = binary_operands(a, b)
    return Maximum.apply(a, b)


def minimum(a, b) -> TensorBase:
    """The smaller of a and b, elementwise (broadcast, with type promotion)."""
    return -maximum(-a, -b)


def triu(x: TensorBase, diagonal: int = 0) -> TensorBase:
    """The upper triangle of the last two dims: elements below diagonal `diagonal` are 0."""
    return _triangle(x, diagonal, True)


def tril(x: TensorBase, diagonal: int = 0) -> TensorBase:
    """The lower triangle of the last two dims: elements above diagonal `diagonal` are 0."""
    return _triangle(x, diagonal, False)


def _triangle(x: TensorBase, diagonal: int, upper: bool) -> TensorBase:
    if x.ndim < 2:
        raise RuntimeError(
            f"{'triu' if upper else 'tril'}: expected a tensor with at least 2 dimensions, "
            f"got shape {tuple(x.shape)}"
        )
    return Triangle.apply(x, diagonal=diagonal, upper=upper)


def _check_mask(x: TensorBase, mask, op: str) -> None:
    if isinstance(mask, TensorBase):
        mask_dtype = mask.dtype.name
    else:
        mask_dtype = str(getattr(mask, "dtype", ""))
    if mask_dtype not in ("bool",):
        raise TypeError(f"{op}: expected a bool mask, got dtype {mask_dtype or type(mask)}")
