"""Turning op arguments into tensors: Python scalars, arrays and type promotion."""
from __future__ import annotations

from typing import TYPE_CHECKING

from minigrad import dtypes
from minigrad.ops.cast import to_dtype
from minigrad.tensor_base import TensorBase

if TYPE_CHECKING:
    from minigrad.tensor import Tensor


def as_tensor_like(value, like: Tensor, dtype: dtypes.dtype | None = None) -> Tensor:
    """`value` (scalar, array or tensor) as a tensor on `like`'s device."""
    if isinstance(value, TensorBase):
        return value
    dtype = dtype or like.dtype
    return like._wrap(like.xp.asarray(value, dtype=dtype.np))


def binary_operands(a, b) -> tuple[Tensor, Tensor]:
    """Both operands as tensors of the promoted dtype (PyTorch's rules, see dtypes.py)."""
    a_is_tensor = isinstance(a, TensorBase)
    b_is_tensor = isinstance(b, TensorBase)
    if a_is_tensor and b_is_tensor:
        if a.data.dtype is b.data.dtype or a.data.dtype == b.data.dtype:
            return a, b
        result = dtypes.promote(a.dtype, a.ndim > 0, b.dtype, b.ndim > 0)
        return _cast(a, result), _cast(b, result)
    if a_is_tensor:
        result = _with_scalar(a, b)
        return _cast(a, result), as_tensor_like(b, a, result)
    if b_is_tensor:
        result = _with_scalar(b, a)
        return as_tensor_like(a, b, result), _cast(b, result)
    raise TypeError(f"expected at least one Tensor operand, got {type(a)} and {type(b)}")


def _with_scalar(t: Tensor, other) -> dtypes.dtype:
    if isinstance(other, (bool, int, float)):
        return dtypes.promote(t.dtype, True, dtypes.of_python_scalar(other), False)
    other_dtype = dtypes.from_numpy(t.xp.asarray(other).dtype)
    return dtypes.promote(t.dtype, True, other_dtype, True)


def _cast(t: Tensor, dtype: dtypes.dtype) -> Tensor:
    if t.data.dtype == dtype.np:
        return t
    return to_dtype(t, dtype)


def check_same_device(op: str, tensor: Tensor, **others: Tensor | None) -> None:
    """RuntimeError naming both devices when one of `others` (raw-array arguments of an
    op, which Function.apply cannot see) is on another device than `tensor`."""
    for name, other in others.items():
        if isinstance(other, TensorBase) and other.device != tensor.device:
            raise RuntimeError(
                f"{op}: expected all tensors on the same device, got the input on "
                f"{tensor.device} and {name} on {other.device}"
            )


def normalize_dim(dim: int, ndim: int, op: str) -> int:
    """A possibly negative dim as an index in [0, ndim), or a clear IndexError."""
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(
            f"{op}: dimension {dim} is out of range for a tensor with {ndim} dimensions "
            f"(expected to be in [{-size}, {size - 1}])"
        )
    return dim % size


def normalize_dims(dim, ndim: int, op: str) -> tuple[int, ...] | None:
    """None (all dims), an int or a sequence of ints as a sorted tuple of dims."""
    if dim is None:
        return None
    if isinstance(dim, int):
        return (normalize_dim(dim, ndim, op),)
    return tuple(sorted(normalize_dim(d, ndim, op) for d in dim))
