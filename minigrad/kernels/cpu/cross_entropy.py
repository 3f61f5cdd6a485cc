"""Numba cross-entropy kernels (log-softmax fused with the per-row loss, and its
gradient) over the rows of 2-D logits.

Contract: x, logp and dx are C-contiguous (rows, C), C >= 1; valid (bool), target (int),
target_weight and scale are (rows,); class_weight is (C,) (ones when the loss has none).
With keep = 1 - eps and spread = eps / C (eps the label smoothing), row i has the
coefficients q[c] = spread * w[c] * valid_i + [c = target_i] * keep * target_weight_i:

    loss_i = -sum_c q[c] * logp[i, c]      (0 for an ignored row)
    dx[i, c] = (exp(logp[i, c]) * sum(q) - q[c]) * scale_i

Performance rule: the forward runs softmax.py's vector log-softmax passes (max, exp +
sum, write logp) over a chunk of rows that stays in L1, then reads each row's loss from
the chunk's logp (one element, or with smoothing one more pass for the weighted sum); the
backward is a single pass per row. Serial (see softmax.py). Numba's cache does not see
edits to softmax.py: delete the cached cross_entropy.* files after one (see __init__.py).
"""

import numpy as np

from minigrad.kernels.cpu.fast_exp import fast_exp
from minigrad.kernels.cpu.jit import kernel
from minigrad.kernels.cpu.softmax import chunk_rows, log_softmax_rows

_FASTMATH = {"reassoc", "contract"}


@kernel(fastmath=_FASTMATH)
def _row_loss(logp, r, valid, target, target_weight, class_weight, keep, spread):
    """Row r's loss from its log-probabilities: keep * -logp[target] * target_weight plus,
    with smoothing, spread * -sum_c w[c] * logp[c]; 0 for an ignored row."""
    if not valid:
        return logp.dtype.type(0)
    loss = -logp[r, target] * target_weight
    if spread != 0:
        # skipped without smoothing: 0 * (-inf) from a masked logit would give NaN
        weighted_sum = logp.dtype.type(0)
        for j in range(logp.shape[1]):
            weighted_sum += class_weight[j] * logp[r, j]
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
    """losses[r] and logp[r] for every row r: softmax.py's log-softmax passes over a chunk
    of rows, then each row's loss while the chunk is still in L1."""
    rows = x.shape[0]
    step = chunk_rows(x.shape[1])
    scratch = np.empty((2, step), x.dtype)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        log_softmax_rows(x, logp, scratch, start, stop)
        for r in range(start, stop):
            losses[r] = _row_loss(logp, r, valid[r], target[r], target_weight[r],
                                  class_weight, keep, spread)


@kernel
def cross_entropy_backward(logp, valid, target, target_weight, class_weight, keep, spread,
                           scale, dx):
    """dx[r] for every row r."""
    class_weight_sum = class_weight.sum()
    for r in range(logp.shape[0]):
        _backward_row(logp[r], valid[r], target[r], target_weight[r], class_weight, keep,
                      spread, class_weight_sum, scale[r], dx[r])
