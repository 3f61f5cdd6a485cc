"""Comparisons and logic: bool results, outside the graph (they have no gradient)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from minigrad.ops.operands import binary_operands

if TYPE_CHECKING:
    from minigrad.tensor import Tensor


def _compare(name: str):
    def compare(a, b) -> Tensor:
        a, b = binary_operands(a, b)
        xp = a.xp
        try:
            return a._wrap(getattr(xp, name)(a.data, b.data))
        except (ValueError, TypeError) as exc:
            if a.device != b.device:
                raise RuntimeError(
                    f"{name}: expected both tensors on the same device, got {a.device} "
                    f"(shape {tuple(a.shape)}) and {b.device} (shape {tuple(b.shape)})"
                ) from exc
            raise RuntimeError(
                f"{name}: cannot broadcast shapes {tuple(a.shape)} and {tuple(b.shape)}: {exc}"
            ) from exc

    compare.__name__ = name
    compare.__doc__ = f"Elementwise numpy.{name}, as a bool tensor."
    return compare


eq = _compare("equal")
ne = _compare("not_equal")
lt = _compare("less")
le = _compare("less_equal")
gt = _compare("greater")
ge = _compare("greater_equal")
logical_and = _compare("logical_and")
logical_or = _compare("logical_or")


def logical_not(a: Tensor) -> Tensor:
    return a._wrap(a.xp.logical_not(a.data))
