"""Comparisons and logic: bool results, outside the graph (they have no gradient)."""
from __future__ import annotations

from minigrad.ops.operands import binary_operands, normalize_dims
from minigrad.tensor_base import TensorBase


def _compare(name: str):
    def compare(a, b) -> TensorBase:
        a, b = binary_operands(a, b)
        xp = a.xp
        try:
            return a._wrap(getattr(xp, name)(a.array, b.array))
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


def logical_not(a: TensorBase) -> TensorBase:
    """not a, elementwise (a bool tensor)."""
    return a._wrap(a.xp.logical_not(a.array))


def any(x: TensorBase, dim=None, keepdim: bool = False) -> TensorBase:  # noqa: A001
    """Whether any element (along dim) is non-zero, as a bool tensor."""
    dims = normalize_dims(dim, x.ndim, "any")
    return x._wrap(x.xp.asarray(x.array.astype(bool).any(axis=dims, keepdims=keepdim)))


def all(x: TensorBase, dim=None, keepdim: bool = False) -> TensorBase:  # noqa: A001
    """Whether every element (along dim) is non-zero, as a bool tensor."""
    dims = normalize_dims(dim, x.ndim, "all")
    return x._wrap(x.xp.asarray(x.array.astype(bool).all(axis=dims, keepdims=keepdim)))


def isnan(x: TensorBase) -> TensorBase:
    """Where x is NaN (a bool tensor)."""
    return x._wrap(x.xp.isnan(x.array))


def isinf(x: TensorBase) -> TensorBase:
    """Where x is +inf or -inf (a bool tensor)."""
    return x._wrap(x.xp.isinf(x.array))


def isfinite(x: TensorBase) -> TensorBase:
    """Where x is neither NaN nor infinite (a bool tensor)."""
    return x._wrap(x.xp.isfinite(x.array))


def isclose(a, b, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> TensorBase:
    """|a - b| <= atol + rtol * |b| elementwise, as a bool tensor."""
    a, b = binary_operands(a, b)
    return a._wrap(a.xp.isclose(a.array, b.array, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(a, b, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    """Whether isclose(a, b) holds everywhere, as a Python bool."""
    return bool(isclose(a, b, rtol, atol, equal_nan).array.all())


def equal(a: TensorBase, b: TensorBase) -> bool:
    """True when a and b have the same shape and the same values (a Python bool)."""
    return tuple(a.shape) == tuple(b.shape) and bool(eq(a, b).array.all())
