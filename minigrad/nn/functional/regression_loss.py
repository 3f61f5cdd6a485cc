"""Losses between two tensors of the same shape, element by element: mse_loss, l1_loss,
smooth_l1_loss and huber_loss, with PyTorch's arguments (reduction "none" | "mean" |
"sum", the deprecated size_average/reduce, and an optional per-element weight)."""
from __future__ import annotations

from minigrad import ops
from minigrad.amp.cast_policy import autocast_op
from minigrad.nn.functional.reduction import check_same_shape, reduce_loss, resolve_reduction
from minigrad.tensor import Tensor


@autocast_op("mse_loss")
def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,  # noqa: A002
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """(input - target)^2; with a weight, mean = sum(w * loss) / sum(w)."""
    reduction = resolve_reduction(size_average, reduce, reduction, "mse_loss")
    check_same_shape(input, target, "mse_loss")
    diff = input - target
    return _weighted(diff * diff, weight, reduction, "mse_loss")


@autocast_op("l1_loss")
def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,  # noqa: A002
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """|input - target| (gradient 0 where they are equal); weight as in mse_loss."""
    reduction = resolve_reduction(size_average, reduce, reduction, "l1_loss")
    check_same_shape(input, target, "l1_loss")
    return _weighted((input - target).abs(), weight, reduction, "l1_loss")


@autocast_op("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,  # noqa: A002
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """With d = |input - target|: 0.5 d^2 / beta where d < beta, else d - 0.5 beta
    (quadratic near zero, linear beyond; beta=0 is l1_loss)."""
    reduction = resolve_reduction(size_average, reduce, reduction, "smooth_l1_loss")
    check_same_shape(input, target, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    diff = input - target
    if beta == 0:
        return reduce_loss(diff.abs(), reduction)
    return reduce_loss(_quadratic_then_linear(diff, beta, 1.0), reduction)


@autocast_op("huber_loss")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",  # noqa: A002
               delta: float = 1.0, weight: Tensor | None = None) -> Tensor:
    """With d = |input - target|: 0.5 d^2 where d < delta, else delta (d - 0.5 delta);
    huber_loss = delta * smooth_l1_loss with beta = delta. A weighted mean is the plain
    mean of w * loss (PyTorch's choice for this loss)."""
    reduction = resolve_reduction(None, None, reduction, "huber_loss")
    check_same_shape(input, target, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    losses = _quadratic_then_linear(input - target, delta, delta)
    if weight is not None:
        _check_weight(weight, input, "huber_loss")
        losses = losses * weight
    return reduce_loss(losses, reduction)


def _quadratic_then_linear(diff: Tensor, edge: float, scale: float) -> Tensor:
    """scale * 0.5 d^2 / edge where d = |diff| < edge, else scale * (d - 0.5 edge): the
    pieces meet with equal value and slope at d = edge. The square is taken of diff, not
    of d, so that the second derivative at diff = 0 is right."""
    quadratic = diff * diff * (0.5 * scale / edge)
    distance = diff.abs()
    linear = (distance - 0.5 * edge) * scale
    return ops.where(distance < edge, quadratic, linear)


def _weighted(losses: Tensor, weight: Tensor | None, reduction: str, op: str) -> Tensor:
    """Reduce w * losses; the weighted mean divides by sum(w)."""
    if weight is None:
        return reduce_loss(losses, reduction)
    _check_weight(weight, losses, op)
    weighted = losses * weight
    if reduction == "mean":
        return weighted.sum() / weight.sum()
    return reduce_loss(weighted, reduction)


def _check_weight(weight: Tensor, input: Tensor, op: str) -> None:  # noqa: A002
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"{op}: weight shape {tuple(weight.shape)} must equal the input shape "
                         f"{tuple(input.shape)}")
