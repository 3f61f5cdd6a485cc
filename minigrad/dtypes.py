"""The five dtypes of minigrad and PyTorch's type-promotion rules.

A `dtype` wraps a NumPy dtype (CuPy uses the same ones). Promotion follows PyTorch, not
NumPy: categories rank bool < integer < floating; a higher category wins outright
(int64 tensor * float32 tensor -> float32, where NumPy would give float64), and within a
category the wider dtype wins. Python scalars and 0-d tensors only lift the category:
a float32 tensor times 2.5 stays float32, an int64 tensor times 2.5 becomes float32.
"""
from __future__ import annotations

import numpy as np


class dtype:  # noqa: N801  (lower case, like torch.dtype)
    """A tensor element type: `mg.float32`, `mg.float64`, `mg.float16`, `mg.int64`, `mg.bool`."""

    __slots__ = ("name", "np", "is_floating_point", "category", "itemsize")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category  # 0 bool, 1 integer, 2 floating
        self.is_floating_point = category == 2
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"minigrad.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = dtype("bool", np.bool_, 0)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)

ALL = (bool_, int64, float16, float32, float64)


class _Unsupported(dtype):
    """A PyTorch dtype minigrad names but cannot compute in: naming it works (code that
    picks a dtype by name imports fine), using it raises a TypeError that says why."""

    __slots__ = ("reason",)

    def __init__(self, name: str, category: int, reason: str):  # no super(): no NumPy dtype
        self.name, self.category, self.reason = name, category, reason
        self.is_floating_point = category == 2

    @property
    def np(self):
        raise TypeError(f"minigrad.{self.name} is not supported: {self.reason}")

    itemsize = np


# NumPy has no bfloat16, and neither has CuPy; ml_dtypes' NumPy bfloat16 computes by
# converting every element through float32 (slower than float32, no memory saved during
# the math) and exists on the CPU only
bfloat16 = _Unsupported("bfloat16", 2, "NumPy and CuPy have no bfloat16 arithmetic; use "
                                       "minigrad.float16 (half precision) or minigrad.float32")
_BY_NUMPY = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in (*ALL, bfloat16)}
DEFAULT_FLOAT = float32
DEFAULT_INT = int64


def from_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy(np_dtype) -> dtype:
    """The minigrad dtype of a NumPy dtype; other integer/float widths map to int64/float32."""
    found = _BY_NUMPY.get(np_dtype)
    if found is not None:
        return found
    np_dtype = np.dtype(np_dtype)
    found = _BY_NUMPY.get(np_dtype)
    if found is not None:
        return found
    if np_dtype.kind in "iu":
        return int64
    if np_dtype.kind == "f":
        return float32
    raise TypeError(f"minigrad supports bool, int64, float16, float32 and float64, got {np_dtype}")


def as_dtype(value) -> dtype:
    """Accept a minigrad dtype, a NumPy dtype or a name such as 'float32'."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is bool:
        return bool_
    if value is int:
        return int64
    if value is float:
        return float32
    return from_numpy(np.dtype(value))


def of_python_scalar(value) -> dtype:
    """The dtype a Python scalar becomes on its own: bool, int64 or float32."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    return float32


def promote(a: dtype, a_is_dimensioned: bool, b: dtype, b_is_dimensioned: bool) -> dtype:
    """Result dtype of a binary op; 'dimensioned' means a tensor with ndim > 0."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a_is_dimensioned != b_is_dimensioned:
        # within a category, a 0-d tensor or scalar does not widen a real tensor
        return a if a_is_dimensioned else b
    return a if a.itemsize >= b.itemsize else b
