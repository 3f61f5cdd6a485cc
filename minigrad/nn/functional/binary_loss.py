"""Binary cross entropy on probabilities (binary_cross_entropy) and on logits
(binary_cross_entropy_with_logits, in the stable form), with PyTorch's weights, clamping
and reductions; binary_cross_entropy's Function is ops/loss.py's BinaryCrossEntropy."""
from __future__ import annotations

from minigrad.amp.cast_policy import autocast_op
from minigrad.nn.functional.reduction import check_same_shape, reduce_loss, resolve_reduction
from minigrad.ops import activation as activation_ops
from minigrad.ops.loss import BinaryCrossEntropy
from minigrad.tensor import Tensor


@autocast_op("binary_cross_entropy")
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
        if not bool(xp.all((t.array >= 0) & (t.array <= 1))):
            raise RuntimeError(f"{op}: all elements of {name} should be between 0 and 1 "
                               f"(probabilities; for logits use "
                               f"binary_cross_entropy_with_logits)")
    losses = BinaryCrossEntropy.apply(input, target)
    return reduce_loss(_apply_weight(losses, weight, op), reduction)


@autocast_op("binary_cross_entropy_with_logits")
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
