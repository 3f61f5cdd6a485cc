"""kl_div: the Kullback-Leibler divergence between a target distribution and a predicted
one, with PyTorch's argument order (the prediction, as log-probabilities, comes first)."""
from __future__ import annotations

import warnings

from minigrad import ops
from minigrad.amp.cast_policy import autocast_op
from minigrad.nn.functional.reduction import REDUCTIONS, check_same_shape, resolve_reduction
from minigrad.tensor import Tensor


@autocast_op("kl_div")
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,  # noqa: A002
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Pointwise terms of KL(P || Q) = sum P (ln P - ln Q), with ln Q = `input` and P =
    `target` (probabilities, or log-probabilities when log_target=True):
        target * (ln target - input)      (0 where target = 0, as x ln x -> 0)
        e^target * (target - input)       (log_target=True)
    reduction="batchmean" sums and divides by input.shape[0]: the divergence per sample,
    the mathematical KL. "mean" divides by the number of elements instead (PyTorch's
    default, which it warns about; so does minigrad), "sum" and "none" as elsewhere."""
    op = "kl_div"
    reduction = resolve_reduction(size_average, reduce, reduction, op,
                                  REDUCTIONS + ("batchmean",))
    if reduction == "mean" and size_average is None and reduce is None:
        warnings.warn("kl_div: reduction='mean' divides the total by the batch size and the "
                      "number of classes; reduction='batchmean' divides by the batch size "
                      "only, which is the KL divergence (PyTorch gives the same warning)",
                      UserWarning, stacklevel=2)
    check_same_shape(input, target, op)
    if not target.dtype.is_floating_point:
        raise TypeError(f"kl_div: target must be a floating-point tensor of "
                        f"{'log-' if log_target else ''}probabilities, got {target.dtype}")
    if log_target:
        terms = target.exp() * (target - input)
    else:
        terms = _x_log_x(target) - target * input
    if reduction == "none":
        return terms
    if reduction == "mean":
        return terms.mean()
    total = terms.sum()
    return total / input.shape[0] if reduction == "batchmean" and input.ndim > 0 else total


def _x_log_x(p: Tensor) -> Tensor:
    """p ln p, 0 at p = 0 (its limit) and NaN where p < 0. ln is taken of 1 where p = 0,
    so the gradient there is ln 1 + 0 = 0 rather than NaN."""
    return p * ops.where(p != 0, p, 1.0).log()
