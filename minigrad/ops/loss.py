"""Losses with gradient rules of their own: cross entropy as one fused, numerically stable
Function (log-softmax and NLL with class weights, ignore_index and label smoothing; its
backward kernel wrapped as CrossEntropyBackward, so that the rule stays differentiable),
and binary cross entropy with PyTorch's clamped logs. PyTorch records a cross entropy as
LogSoftmax and NllLoss nodes; minigrad's fused node is CrossEntropyBackward0."""
from __future__ import annotations

import numpy as np

from minigrad import kernels
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.kernels.cross_entropy import smoothed_targets
from minigrad.ops.softmax import SoftmaxBackward, softmax

LOG_FLOOR = -100.0  # PyTorch clamps ln x and ln(1 - x) here: x = 0 or 1 stays finite
PRODUCT_FLOOR = 1e-12  # and x (1 - x) here in the gradient's denominator


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
        valid, safe_target, self.target_weight = target_weights(
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
        targets = smoothed_targets(x.array, *self.rows)
        row_total = x._wrap(targets.sum(axis=-1, keepdims=True))
        probs = softmax(x, -1)
        grad_x = SoftmaxBackward.apply(probs, h * scale * row_total) \
            if self.needs_input_grad[0] else None
        grad_scale = None
        if self.needs_input_grad[1]:
            grad_scale = (h * (probs * row_total - x._wrap(targets))).sum(-1, keepdim=True)
        return grad_x, grad_scale


def target_weights(target, weight, ignore_index: int, dtype):
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
