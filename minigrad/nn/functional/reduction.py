"""The reduction argument every loss shares: checking it, PyTorch's legacy size_average /
reduce pair, and reducing per-element losses."""
from __future__ import annotations

import warnings

from minigrad.tensor import Tensor

REDUCTIONS = ("none", "mean", "sum")


def check_reduction(reduction: str, op: str, allowed: tuple[str, ...] = REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be one of {allowed}, got {reduction!r}")


def resolve_reduction(size_average: bool | None, reduce: bool | None, reduction: str,
                      op: str, allowed: tuple[str, ...] = REDUCTIONS) -> str:
    """`reduction`, or what PyTorch's deprecated size_average/reduce pair meant when either
    is given: reduce=False -> "none", else size_average=False -> "sum", else "mean"."""
    for name, flag in (("size_average", size_average), ("reduce", reduce)):
        if isinstance(flag, str):
            raise TypeError(f"{op}: {name} must be a bool or None, got {flag!r}; pass the "
                            f"reduction by keyword: reduction={flag!r}")
    if size_average is not None or reduce is not None:
        legacy = "none" if reduce is False else ("sum" if size_average is False else "mean")
        warnings.warn(f"{op}: size_average and reduce are deprecated (as in PyTorch); use "
                      f"reduction={legacy!r}", DeprecationWarning, stacklevel=3)
        return legacy
    check_reduction(reduction, op, allowed)
    return reduction


def reduce_loss(losses: Tensor, reduction: str) -> Tensor:
    """Per-element losses, their mean or their sum."""
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def check_same_shape(input: Tensor, target: Tensor, op: str) -> None:  # noqa: A002
    """Losses compare input and target element by element: their shapes must agree
    (PyTorch broadcasts some with a warning; a mismatch is almost always a bug)."""
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{op}: target shape {tuple(target.shape)} differs from input shape "
                         f"{tuple(input.shape)}; they must be the same")
