"""Softmax cross-entropy over the rows of (M, C) logits, forward (per-row losses and
log-probabilities) and backward (the gradient rows): the reference twins in plain `xp`
code, and their dispatchers (the fused Numba kernels of kernels/cpu/cross_entropy.py where
dispatch.py and the thresholds allow).

Rows are described by `valid` (not ignored), `target` (class ids, any id where ignored),
`target_weight` (w[target], 0 where ignored) and the optional class weights w (C,). With
eps the label smoothing, row i's target distribution is
    q[i, c] = eps * w[c] / C * valid_i + [c = target_i] * (1 - eps) * target_weight_i.
"""
import numpy as np

from minigrad.backend import array_module
from minigrad.kernels.dispatch import (
    aligned_empty,
    any_half,
    as_kernel_array,
    cpu_kernels_for,
    in_float32,
)
from minigrad.kernels.softmax import log_softmax_twin
from minigrad.kernels.thresholds import MIN_SIZE

# ----------------------------------------------------------------------------- twins


def cross_entropy_twin(x, valid, target, target_weight, class_weight, label_smoothing):
    """(losses, logp): logp = log_softmax(x), loss_i = -sum_c q[i, c] logp[i, c]."""
    xp = array_module(x)
    logp = log_softmax_twin(x)
    picked = logp[xp.arange(logp.shape[0]), target]
    losses = xp.where(valid, -picked, 0) * target_weight
    if label_smoothing:
        per_class = logp * class_weight if class_weight is not None else logp
        smooth = xp.where(valid, -per_class.sum(axis=-1), 0)
        losses = (1 - label_smoothing) * losses + (label_smoothing / logp.shape[1]) * smooth
    return losses.astype(logp.dtype, copy=False), logp


def cross_entropy_backward_twin(logp, valid, target, target_weight, class_weight,
                                label_smoothing, scale):
    """dx = (exp(logp) * sum_c q[:, c] - q) * scale."""
    q = smoothed_targets(logp, valid, target, target_weight, class_weight, label_smoothing)
    return (array_module(logp).exp(logp) * q.sum(axis=-1, keepdims=True) - q) * scale


def smoothed_targets(x, valid, target, target_weight, class_weight, label_smoothing):
    """The dense target distributions q (M, C) of the module docstring."""
    xp = array_module(x)
    rows, classes = x.shape
    q = xp.zeros(x.shape, dtype=x.dtype)
    if label_smoothing:
        weight = class_weight if class_weight is not None else xp.ones(classes, dtype=x.dtype)
        q += (label_smoothing / classes) * weight * valid[:, None]
    q[xp.arange(rows), target] += (1 - label_smoothing) * target_weight
    return q


# ----------------------------------------------------------------------------- dispatch


def cross_entropy(x, valid, target, target_weight, class_weight, label_smoothing: float):
    """(losses, logp) for logits x (M, C); see cross_entropy_twin."""
    if any_half(x, target_weight, class_weight):
        return in_float32(cross_entropy, x, valid, target, target_weight, class_weight,
                          label_smoothing)
    floats = [a for a in (x, target_weight, class_weight) if a is not None]
    cpu = cpu_kernels_for("cross_entropy", MIN_SIZE["cross_entropy"], x.size, *floats)
    if cpu is None or x.ndim != 2:
        return cross_entropy_twin(x, valid, target, target_weight, class_weight,
                                  label_smoothing)
    rows = as_kernel_array(x)
    # a plain np.empty, as in softmax.py: aligned_empty's buffer is a fresh mapping each
    # call above 128 KB, whose page faults cost about 20 us at (512, 64) float32
    logp = np.empty(rows.shape, x.dtype)
    losses = np.empty(rows.shape[0], x.dtype)
    arguments = _row_arguments(x, valid, target, target_weight, class_weight, label_smoothing)
    cpu.cross_entropy(rows, *arguments, losses, logp)
    return losses, logp


def cross_entropy_backward(logp, valid, target, target_weight, class_weight,
                           label_smoothing: float, scale):
    """dx = (exp(logp) * sum_c q[:, c] - q) * scale, scale a scalar or one factor per row
    ((M, 1))."""
    if any_half(logp, target_weight, class_weight, scale):
        return in_float32(cross_entropy_backward, logp, valid, target, target_weight,
                          class_weight, label_smoothing, scale)
    floats = [a for a in (logp, target_weight, class_weight, scale) if a is not None]
    cpu = cpu_kernels_for("cross_entropy", MIN_SIZE["cross_entropy_backward"], logp.size,
                          *floats)
    if cpu is None:
        return cross_entropy_backward_twin(logp, valid, target, target_weight, class_weight,
                                           label_smoothing, scale)
    rows = as_kernel_array(logp)
    dx = aligned_empty(rows.shape, logp.dtype)
    row_scale = np.ascontiguousarray(np.broadcast_to(scale, (rows.shape[0], 1))[:, 0])
    arguments = _row_arguments(logp, valid, target, target_weight, class_weight,
                               label_smoothing)
    cpu.cross_entropy_backward(rows, *arguments, row_scale, dx)
    return dx


def _row_arguments(x, valid, target, target_weight, class_weight, label_smoothing):
    """The per-row and per-class operands of the kernels, contiguous, and the two smoothing
    factors keep = 1 - eps and spread = eps / C in the logits' dtype."""
    dtype = x.dtype.type
    classes = x.shape[1]
    weight = np.ones(classes, x.dtype) if class_weight is None else as_kernel_array(class_weight)
    rows = (as_kernel_array(valid), as_kernel_array(target), as_kernel_array(target_weight))
    return (*rows, weight, dtype(1 - label_smoothing), dtype(label_smoothing / classes))
