"""Comparisons and logic: bool results, outside the graph (they have no gradient)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from minigrad.ops.operands import binary_operands, normalize_dims

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


def any(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether any element (along dim) is non-zero, as a bool tensor."""
    dims = normalize_dims(dim, x.ndim, "any")
    return x._wrap(x.xp.asarray(x.data.astype(bool).any(axis=dims, keepdims=keepdim)))


def all(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every element (along dim) is non-zero, as a bool tensor."""
    dims = normalize_dims(dim, x.ndim, "all")
    return x._wrap(x.xp.asarray(x.data.astype(bool).all(axis=dims, keepdims=keepdim)))


def isnan(x: Tensor) -> Tensor:
    return x._wrap(x.xp.isnan(x.data))


def isinf(x: Tensor) -> Tensor:
    return x._wrap(x.xp.isinf(x.data))


def isfinite(x: Tensor) -> Tensor:
    return x._wrap(x.xp.isfinite(x.data))


def isclose(a, b, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
    """|a - b| <= atol + rtol * |b| elementwise, as a bool tensor."""
    a, b = binary_operands(a, b)
    return a._wrap(a.xp.isclose(a.data, b.data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(a, b, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    """Whether isclose(a, b) holds everywhere, as a Python bool."""
    return bool(isclose(a, b, rtol, atol, equal_nan).data.all())


def equal(a: Tensor, b: Tensor) -> bool:
    """True when a and b have the same shape and the same values (a Python bool)."""
    return tuple(a.shape) == tuple(b.shape) and bool(eq(a, b).data.all())
