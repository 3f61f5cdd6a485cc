"""Turning op arguments into tensors: Python scalars, arrays and type promotion."""
from __future__ import annotations

import numpy as np

from minigrad import dtypes
from minigrad.ops.cast import to_dtype
from minigrad.tensor_base import TensorBase


def as_tensor_like(value, like: TensorBase, dtype: dtypes.dtype | None = None) -> TensorBase:
    """`value` (scalar, array or tensor) as a tensor on `like`'s device."""
    if isinstance(value, TensorBase):
        return value
    dtype = dtype or like.dtype
    try:
        array = like.xp.asarray(value, dtype=dtype.np)
    except OverflowError:  # a Python int beyond a narrow integer dtype wraps, as in PyTorch
        array = like.xp.asarray(value).astype(dtype.np)
    return like._wrap(array)


def binary_operands(a, b) -> tuple[TensorBase, TensorBase]:
    """Both operands as tensors of the promoted dtype (PyTorch's rules, see dtypes.py)."""
    a_is_tensor = isinstance(a, TensorBase)
    b_is_tensor = isinstance(b, TensorBase)
    if not (a_is_tensor or b_is_tensor):
        raise TypeError(f"expected at least one Tensor operand, got {type(a)} and {type(b)}")
    if a_is_tensor and b_is_tensor and (a.array.dtype is b.array.dtype
                                        or a.array.dtype == b.array.dtype):
        return a, b
    result = result_type(a, b)
    like = a if a_is_tensor else b
    return _operand(a, like, result), _operand(b, like, result)


def result_type(tensor1, tensor2) -> dtypes.dtype:
    """The dtype of a binary op on these operands (torch.result_type): each a tensor, a
    Python or NumPy number, or an array (ranked as a tensor of its shape)."""
    return dtypes.promote(*_dtype_and_rank(tensor1), *_dtype_and_rank(tensor2))


def _dtype_and_rank(value) -> tuple[dtypes.dtype, int]:
    if isinstance(value, TensorBase):
        dtype, ndim = value.dtype, value.array.ndim
    elif isinstance(value, (bool, int, float, np.generic)):
        return dtypes.of_python_scalar(value), dtypes.SCALAR
    else:
        array = value if hasattr(value, "dtype") else np.asarray(value)
        dtype, ndim = dtypes.from_numpy(array.dtype), array.ndim
    return dtype, dtypes.DIMENSIONED if ndim else dtypes.ZERO_DIM


def _operand(value, like: TensorBase, dtype: dtypes.dtype) -> TensorBase:
    if not isinstance(value, TensorBase):
        return as_tensor_like(value, like, dtype)
    return value if value.array.dtype == dtype.np else to_dtype(value, dtype)


def check_same_device(op: str, tensor: TensorBase, **others: TensorBase | None) -> None:
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
