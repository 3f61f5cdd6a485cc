"""Binary cross entropy on probabilities (binary_cross_entropy) and on logits
(binary_cross_entropy_with_logits), with PyTorch's weights, clamping and reductions."""
from __future__ import annotations

import numpy as np

from minigrad.autograd import Function
from minigrad.backend import array_module
from minigrad.nn.functional.reduction import check_same_shape, reduce_loss, resolve_reduction
from minigrad.ops import activation as activation_ops
from minigrad.tensor import Tensor

LOG_FLOOR = -100.0  # PyTorch clamps ln x and ln(1 - x) here: x = 0 or 1 stays finite
PRODUCT_FLOOR = 1e-12  # and x (1 - x) here in the gradient's denominator


class BinaryCrossEntropy(Function):
    """For probabilities x and targets y in [0, 1], with L(x) = max(ln x, -100):
        loss = -(y L(x) + (1 - y) L(1 - x))
        dx = g (x - y) / max(x (1 - x), 1e-12),  dy = g (L(1 - x) - L(x))"""

    def forward(self, x, y):
        self.save_for_backward(x, y)
        log_x, log_rest = _clamped_logs(x)
        return -(y * log_x + (1 - y) * log_rest)

    def backward(self, grad):
        x, y = self.saved
        grad_x = grad_y = None
        if self.needs_input_grad[0]:
            grad_x = grad * (x - y) / (x * (1 - x)).clamp(min=PRODUCT_FLOOR)
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore"):  # ln 0 = -inf is clamped to -100
                log_rest = (1 - x).log().clamp(min=LOG_FLOOR)
                log_x = x.log().clamp(min=LOG_FLOOR)
            grad_y = grad * (log_rest - log_x)
        return grad_x, grad_y


def _clamped_logs(x):
    """(max(ln x, -100), max(ln(1 - x), -100)) on arrays."""
    xp = array_module(x)
    with np.errstate(divide="ignore"):
        return xp.maximum(xp.log(x), LOG_FLOOR), xp.maximum(xp.log1p(-x), LOG_FLOOR)


def binary_cross_entropy(input: Tensor, target: Tensor,  # noqa: A002
                         weight: Tensor | None = None, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """-w (y ln x + (1 - y) ln(1 - x)) for probabilities `input` and targets of the same
    shape, both in [0, 1] (a RuntimeError otherwise, as in PyTorch); each log is clamped
    at -100. `weight` broadcasts to the input's shape."""
    op = "binary_cross_entropy"
    reduction = resolve_reduction(size_average, reduce, reduction, op)
    _check_operands(input, target, op)
    for name, t in (("input", input), ("target", target)):
        xp = t.xp
        if not bool(xp.all((t.data >= 0) & (t.data <= 1))):
            raise RuntimeError(f"{op}: all elements of {name} should be between 0 and 1 "
                               f"(probabilities; for logits use "
                               f"binary_cross_entropy_with_logits)")
    losses = BinaryCrossEntropy.apply(input, target)
    return reduce_loss(_apply_weight(losses, weight, op), reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """binary_cross_entropy(sigmoid(x), y) in the stable form
        loss = w ((1 - y) x + (1 + (p - 1) y) softplus(-x))
    (softplus(-x) = -ln sigmoid(x), computed without overflow), where p = pos_weight
    weighs the positive term per class (it broadcasts against the last dim)."""
    op = "binary_cross_entropy_with_logits"
    reduction = resolve_reduction(size_average, reduce, reduction, op)
    _check_operands(input, target, op)
    negative_log_sigmoid = activation_ops.softplus(-input)
    if pos_weight is None:
        log_weight = negative_log_sigmoid
    else:
        _check_broadcasts_to(pos_weight, input, "pos_weight", op)
        log_weight = (target * (pos_weight - 1) + 1) * negative_log_sigmoid
    losses = (1 - target) * input + log_weight
    return reduce_loss(_apply_weight(losses, weight, op), reduction)


def _check_operands(input: Tensor, target: Tensor, op: str) -> None:  # noqa: A002
    check_same_shape(input, target, op)
    for name, t in (("input", input), ("target", target)):
        if not t.dtype.is_floating_point:
            raise TypeError(f"{op}: {name} must be a floating-point tensor, got {t.dtype} "
                            f"(convert class ids with .float())")


def _apply_weight(losses: Tensor, weight: Tensor | None, op: str) -> Tensor:
    if weight is None:
        return losses
    _check_broadcasts_to(weight, losses, "weight", op)
    return losses * weight


def _check_broadcasts_to(weight: Tensor, input: Tensor, name: str, op: str) -> None:  # noqa: A002
    shape, input_shape = tuple(weight.shape), tuple(input.shape)
    fits = len(shape) <= len(input_shape) and all(
        size in (1, input_size) for size, input_size in zip(shape[::-1], input_shape[::-1]))
    if not fits:
        raise ValueError(f"{op}: {name} of shape {shape} does not broadcast to the input "
                         f"shape {input_shape}")
