"""Classification losses: cross_entropy (ops/loss.py's CrossEntropy, one fused,
numerically stable Function: log-softmax + NLL with class weights, ignore_index and label
smoothing) and nll_loss. Class dim is 1 for (N, C, d1, ...) inputs, as in PyTorch; (C,)
inputs take a 0-d target."""
from __future__ import annotations

from minigrad.amp.cast_policy import autocast_op
from minigrad.backend import array_module
from minigrad.nn.functional.reduction import resolve_reduction
from minigrad.ops.loss import CrossEntropy, target_weights
from minigrad.ops.operands import check_same_device
from minigrad.tensor import Tensor, constant


@autocast_op("cross_entropy")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross entropy of logits `input` (N, C, ...) against class ids `target`
    (N, ...): mean/sum/none over the rows not ignored (see CrossEntropy)."""
    reduction = resolve_reduction(size_average, reduce, reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing}")
    check_same_device("cross_entropy", input, target=target, weight=weight)
    logits, ids, out_shape = _flatten_classes(input, target, ignore_index, "cross_entropy")
    loss = CrossEntropy.apply(
        logits, target=ids, weight=None if weight is None else weight.array,
        ignore_index=ignore_index, label_smoothing=float(label_smoothing),
        reduction=reduction)
    return loss.reshape(out_shape) if reduction == "none" else loss


@autocast_op("nll_loss")
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """-w[y] * input[y] per row, for log probabilities `input` (N, C, ...); the mean
    divides by the summed weights of the rows not ignored."""
    reduction = resolve_reduction(size_average, reduce, reduction, "nll_loss")
    check_same_device("nll_loss", input, target=target, weight=weight)
    logp, ids, out_shape = _flatten_classes(input, target, ignore_index, "nll_loss")
    _, safe_target, target_weight = target_weights(
        ids, None if weight is None else weight.array, ignore_index, logp.array.dtype)
    rows = constant(logp.xp.arange(ids.shape[0]))
    picked = logp[rows, constant(safe_target)]
    losses = -picked * constant(target_weight)
    if reduction == "none":
        return losses.reshape(out_shape)
    if reduction == "sum":
        return losses.sum()
    total_weight = float(target_weight.sum())
    return losses.sum() * (1.0 / total_weight if total_weight else float("nan"))


def _flatten_classes(input: Tensor, target: Tensor, ignore_index: int, op: str):  # noqa: A002
    """(rows, C) scores with the class dim last, (rows,) integer ids, and the shape of
    the unreduced loss."""
    if not isinstance(target, Tensor) or target.dtype.is_floating_point:
        raise TypeError(f"{op}: expected integer class ids as target (class probabilities "
                        f"are not supported), got {getattr(target, 'dtype', type(target))}")
    if input.ndim == 0:
        raise RuntimeError(f"{op}: input must have a class dimension, got a 0-d tensor")
    expected = (() if input.ndim == 1 else (input.shape[0],) + tuple(input.shape[2:]))
    if tuple(target.shape) != expected:
        raise RuntimeError(
            f"{op}: input of shape {tuple(input.shape)} (class dim 1) needs a target of "
            f"shape {expected}, got {tuple(target.shape)}"
        )
    classes = input.shape[0] if input.ndim == 1 else input.shape[1]
    if input.ndim == 1:
        scores = input.reshape(1, classes)
    elif input.ndim == 2:
        scores = input
    else:
        order = (0, *range(2, input.ndim), 1)
        scores = input.permute(*order).reshape(-1, classes)
    ids = target.array.reshape(-1)
    _check_ids(ids, classes, ignore_index, op)
    return scores, ids, expected


def _check_ids(ids, classes: int, ignore_index: int, op: str) -> None:
    if ids.size == 0 or (ids.min() >= 0 and ids.max() < classes):
        return  # every id a class: the common case, two reductions instead of five passes
    xp = array_module(ids)
    bad = (ids != ignore_index) & ((ids < 0) | (ids >= classes))
    if bool(xp.any(bad)):
        raise IndexError(
            f"{op}: target ids must be in [0, {classes}) or equal ignore_index="
            f"{ignore_index}, got {int(ids[bad][0])}"
        )
