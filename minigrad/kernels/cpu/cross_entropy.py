"""Numba cross-entropy kernels (log-softmax fused with the per-row loss, and its
gradient) over the rows of 2-D logits.

Contract: x, logp and dx are C-contiguous (rows, C), C >= 1; valid (bool), target (int),
target_weight and scale are (rows,); class_weight is (C,) (ones when the loss has none).
With keep = 1 - eps and spread = eps / C (eps the label smoothing), row i has the
coefficients q[c] = spread * w[c] * valid_i + [c = target_i] * keep * target_weight_i:

    loss_i = -sum_c q[c] * logp[i, c]      (0 for an ignored row)
    dx[i, c] = (exp(logp[i, c]) * sum(q) - q[c]) * scale_i

Performance rule: one row lives in L1. The forward makes the log-softmax passes (max,
exp + sum, write logp) and gathers the weighted sum of logp in the last one; the backward
is a single pass. Serial (see softmax.py).
"""

import numpy as np

from minigrad.kernels.cpu.fast_exp import fast_exp
from minigrad.kernels.cpu.jit import kernel
from minigrad.kernels.cpu.softmax import row_max

_FASTMATH = {"reassoc", "contract"}


@kernel(fastmath=_FASTMATH)
def _forward_row(x, valid, target, target_weight, class_weight, keep, spread, logp):
    """Writes logp = log_softmax(x) and returns the row's loss."""
    shift = row_max(x)
    total = x.dtype.type(0)
    for j in range(x.size):
        total += fast_exp(x[j] - shift)
    log_total = np.log(total) if total > 0 else x.dtype.type(0)
    weighted_sum = x.dtype.type(0)
    for j in range(x.size):
        z = x[j] - shift - log_total
        logp[j] = z
        weighted_sum += class_weight[j] * z
    if not valid:
        return x.dtype.type(0)
    loss = -logp[target] * target_weight
    if spread != 0:
        # skipped without smoothing: 0 * (-inf) from a masked logit would give NaN
        loss = keep * loss + spread * -weighted_sum
    return loss


@kernel(fastmath=_FASTMATH)
def _backward_row(logp, valid, target, target_weight, class_weight, keep, spread,
                  class_weight_sum, scale, dx):
    smooth = spread if valid else logp.dtype.type(0)
    picked = keep * target_weight
    row_total = smooth * class_weight_sum + picked
    for j in range(logp.size):
        dx[j] = (fast_exp(logp[j]) * row_total - smooth * class_weight[j]) * scale
    dx[target] = (fast_exp(logp[target]) * row_total
                  - (smooth * class_weight[target] + picked)) * scale


@kernel
def cross_entropy(x, valid, target, target_weight, class_weight, keep, spread, losses, logp):
    """losses[r] and logp[r] for every row r."""
    for r in range(x.shape[0]):
        losses[r] = _forward_row(x[r], valid[r], target[r], target_weight[r],
                                 class_weight, keep, spread, logp[r])


@kernel
def cross_entropy_backward(logp, valid, target, target_weight, class_weight, keep, spread,
                           scale, dx):
    """dx[r] for every row r."""
    class_weight_sum = class_weight.sum()
    for r in range(logp.shape[0]):
        _backward_row(logp[r], valid[r], target[r], target_weight[r], class_weight, keep,
                      spread, class_weight_sum, scale[r], dx[r])
