"""Classification losses: cross_entropy (one fused, numerically stable Function:
log-softmax + NLL with class weights, ignore_index and label smoothing) and nll_loss.
Class dim is 1 for (N, C, d1, ...) inputs, as in PyTorch; (C,) inputs take a 0-d target."""
from __future__ import annotations

import numpy as np

from minigrad import kernels
from minigrad.autograd import Function
from minigrad.backend import array_module
from minigrad.kernels.cross_entropy import smoothed_targets
from minigrad.nn.functional.reduction import resolve_reduction
from minigrad.ops import softmax
from minigrad.ops.operands import check_same_device
from minigrad.ops.softmax import SoftmaxBackward
from minigrad.tensor import Tensor, constant


class CrossEntropy(Function):
    """For logits x (M, C), targets y (M,), class weights w (C,) and smoothing eps, with
    q[i, c] = (1 - eps) w[y_i] [c = y_i] + eps w[c] / C  (q[i] = 0 where y_i is ignored):
        loss_i = -sum_c q[i, c] log softmax(x)[i, c]
        mean:  sum_i loss_i / D,  D = sum of w[y_i] over the rows not ignored
        dx = CrossEntropyBackward(x, s),  s_i = g (none: g_i; mean: g / D)
    An all-ignored batch with reduction="mean" gives NaN, as in PyTorch, and a zero
    gradient (never NaN)."""

    def forward(self, x, target, weight, ignore_index, label_smoothing, reduction):
        self.reduction = reduction
        valid, safe_target, self.target_weight = _target_weights(
            target, weight, ignore_index, x.dtype)
        self.rows = (valid, safe_target, self.target_weight, weight, label_smoothing)
        losses, self.logp = kernels.cross_entropy(x, *self.rows)
        self.save_for_backward(x)
        return _reduce_rows(losses, self.target_weight, reduction)

    def backward(self, grad):
        (x,) = self.saved
        if self.reduction == "none":
            scale = grad.reshape(-1, 1)
        elif self.reduction == "sum":
            scale = grad
        else:
            total_weight = float(self.target_weight.sum())
            scale = grad * (1.0 / total_weight) if total_weight != 0 else grad * 0.0
        return CrossEntropyBackward.apply(x, scale, logp=self.logp, rows=self.rows)


class CrossEntropyBackward(Function):
    """dx = (p sum_c q[:, c] - q) * s, p = softmax(x), q as in CrossEntropy, s a scalar or
    one factor per row (M, 1). Its own gradients, for an upstream h:
        dx = softmax_backward(p, h * s * sum_c q),  ds = sum_c h * (p sum_c q - q)."""

    def forward(self, x, scale, logp=None, rows=None):
        self.rows = rows
        self.save_for_backward(x, scale)
        return kernels.cross_entropy_backward(logp, *rows, scale)

    def backward(self, h):
        x, scale = self.saved
        targets = smoothed_targets(x.data, *self.rows)
        row_total = constant(targets.sum(axis=-1, keepdims=True))
        probs = softmax(x, -1)
        grad_x = SoftmaxBackward.apply(probs, h * scale * row_total) \
            if self.needs_input_grad[0] else None
        grad_scale = None
        if self.needs_input_grad[1]:
            grad_scale = (h * (probs * row_total - constant(targets))).sum(-1, keepdim=True)
        return grad_x, grad_scale


def _target_weights(target, weight, ignore_index: int, dtype):
    """valid = target != ignore_index, the target with ignored ids replaced by 0 (safe to
    index with), and the row weights w[y_i] (1 without class weights; 0 if ignored)."""
    valid = target != ignore_index
    safe_target = array_module(target).where(valid, target, 0)
    target_weight = valid.astype(dtype)
    if weight is not None:
        target_weight *= weight[safe_target]
    return valid, safe_target, target_weight


def _reduce_rows(losses, target_weight, reduction: str):
    if reduction == "none":
        return losses
    total = losses.sum()
    if reduction == "sum":
        return total
    with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 -> NaN, as in PyTorch
        return (total / target_weight.sum()).astype(losses.dtype)


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
        logits, target=ids, weight=None if weight is None else weight.data,
        ignore_index=ignore_index, label_smoothing=float(label_smoothing),
        reduction=reduction)
    return loss.reshape(out_shape) if reduction == "none" else loss


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """-w[y] * input[y] per row, for log probabilities `input` (N, C, ...); the mean
    divides by the summed weights of the rows not ignored."""
    reduction = resolve_reduction(size_average, reduce, reduction, "nll_loss")
    check_same_device("nll_loss", input, target=target, weight=weight)
    logp, ids, out_shape = _flatten_classes(input, target, ignore_index, "nll_loss")
    _, safe_target, target_weight = _target_weights(
        ids, None if weight is None else weight.data, ignore_index, logp.data.dtype)
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
    ids = target.data.reshape(-1)
    _check_ids(ids, classes, ignore_index, op)
    return scores, ids, expected


def _check_ids(ids, classes: int, ignore_index: int, op: str) -> None:
    xp = array_module(ids)
    bad = (ids != ignore_index) & ((ids < 0) | (ids >= classes))
    if ids.size and bool(xp.any(bad)):
        raise IndexError(
            f"{op}: target ids must be in [0, {classes}) or equal ignore_index="
            f"{ignore_index}, got {int(ids[bad][0])}"
        )
