"""Dispatchers for softmax cross-entropy over the rows of (M, C) logits, forward (per-row
losses and log-probabilities) and backward (the gradient rows): the fused Numba kernels of
minigrad/kernels/cpu/cross_entropy.py or the reference twin. Rows are described by
`valid` (not ignored), `target` (class ids, any id where ignored), `target_weight`
(w[target], 0 where ignored) and the optional class weights w (C,).
"""

import numpy as np

from minigrad.kernels import reference
from minigrad.kernels.dispatch import (
    FUSED_ROWS_MIN_ELEMENTS,
    PARALLEL_ELEMENTS,
    aligned_empty,
    as_kernel_array,
    forced,
    numba_eligible,
)


def _use_kernel(x, target_weight, class_weight) -> bool:
    floats = (x, target_weight) if class_weight is None else (x, target_weight, class_weight)
    if x.ndim != 2 or x.size == 0 or not numba_eligible(*floats):
        # CuPy arrays take the twin: no CUDA kernel of this one
        return False
    return forced() or x.size >= FUSED_ROWS_MIN_ELEMENTS


def _row_arguments(x, valid, target, target_weight, class_weight, label_smoothing):
    """The per-row and per-class operands of the kernels, contiguous, and the two smoothing
    factors keep = 1 - eps and spread = eps / C in the logits' dtype."""
    dtype = x.dtype.type
    classes = x.shape[1]
    weight = np.ones(classes, x.dtype) if class_weight is None else as_kernel_array(class_weight)
    rows = (as_kernel_array(valid), as_kernel_array(target), as_kernel_array(target_weight))
    return (*rows, weight, dtype(1 - label_smoothing), dtype(label_smoothing / classes))


def cross_entropy(x, valid, target, target_weight, class_weight, label_smoothing: float):
    """(losses, logp): logp = log_softmax(x) and, with the smoothed coefficients
    q[i, c] = eps * w[c] / C * valid_i + [c = target_i] * (1 - eps) * target_weight_i,
    loss_i = -sum_c q[i, c] * logp[i, c]."""
    if not _use_kernel(x, target_weight, class_weight):
        return reference.cross_entropy(x, valid, target, target_weight, class_weight,
                                       label_smoothing)
    from minigrad.kernels.cpu import cross_entropy as cpu

    rows = as_kernel_array(x)
    logp = aligned_empty(rows.shape, x.dtype)
    losses = np.empty(rows.shape[0], x.dtype)
    arguments = _row_arguments(x, valid, target, target_weight, class_weight, label_smoothing)
    cpu.cross_entropy(rows, *arguments, losses, logp, x.size >= PARALLEL_ELEMENTS)
    return losses, logp


def cross_entropy_backward(logp, valid, target, target_weight, class_weight,
                           label_smoothing: float, scale):
    """dx = (exp(logp) * sum_c q[:, c] - q) * scale, with q as in `cross_entropy` and
    scale a scalar or one factor per row ((M, 1))."""
    if not _use_kernel(logp, target_weight, class_weight) or scale.dtype != logp.dtype:
        return reference.cross_entropy_backward(logp, valid, target, target_weight,
                                                class_weight, label_smoothing, scale)
    from minigrad.kernels.cpu import cross_entropy as cpu

    rows = as_kernel_array(logp)
    dx = aligned_empty(rows.shape, logp.dtype)
    row_scale = np.ascontiguousarray(np.broadcast_to(scale, (rows.shape[0], 1))[:, 0])
    arguments = _row_arguments(logp, valid, target, target_weight, class_weight,
                               label_smoothing)
    cpu.cross_entropy_backward(rows, *arguments, row_scale, dx,
                               logp.size >= PARALLEL_ELEMENTS)
    return dx
