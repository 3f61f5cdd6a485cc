"""The dtypes of minigrad, PyTorch's type-promotion rules, and mg.iinfo / mg.finfo.

A `dtype` wraps a NumPy dtype (CuPy uses the same ones). Promotion follows PyTorch, not
NumPy. Categories rank bool < integer < floating, and within a category the wider dtype
wins (uint8 with int8 gives int16, the narrowest dtype that holds both). Operands rank
too: a tensor with dimensions ranks above a 0-d tensor, which ranks above a Python
scalar, and a lower-ranked operand changes the result only when its category is higher:

    int32 tensor * 2       -> int32      (NumPy's rules agree here)
    float16 tensor * 2.5   -> float16
    int64 tensor * 2.5     -> float32    (a Python float counts as the default float)
    int64 tensor * float32 tensor -> float32   (NumPy would give float64)
    int8 tensor * int32 0-d tensor -> int8
"""
from __future__ import annotations

import numpy as np


class dtype:  # noqa: N801  (lower case, like torch.dtype)
    """A tensor element type: mg.bool, mg.uint8, mg.int8, mg.int16, mg.int32, mg.int64,
    mg.float16, mg.float32, mg.float64."""

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "category", "itemsize")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category  # 0 bool, 1 integer, 2 floating
        self.is_floating_point = category == 2
        self.is_signed = self.np.kind in "if"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"minigrad.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)


class _Unsupported(dtype):
    """A PyTorch dtype minigrad names but cannot compute in: naming it works (code that
    picks a dtype by name imports fine), using it raises a TypeError that says why."""

    __slots__ = ("reason",)

    def __init__(self, name: str, category: int, reason: str):  # no super(): no NumPy dtype
        self.name, self.category, self.reason = name, category, reason
        self.is_floating_point = category == 2
        self.is_signed = True

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
NAMES = ", ".join(d.name for d in ALL)
DEFAULT_FLOAT = float32
DEFAULT_INT = int64


def from_name(name: str) -> dtype:
    return _BY_NAME[name]


def is_name(text: str) -> bool:
    """Whether `text` is a dtype's name, such as 'float32'."""
    return text in _BY_NAME


def from_numpy(np_dtype) -> dtype:
    """The minigrad dtype of a NumPy dtype; the unsigned integers wider than uint8 map to
    int64, and other float widths to float32."""
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
    raise TypeError(f"minigrad supports {NAMES}, got {np_dtype}")


def as_dtype(value) -> dtype:
    """Accept a minigrad dtype, a NumPy dtype, a name such as 'float32', or the Python
    types bool, int and float (float is float64, as in PyTorch)."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is bool:
        return bool_
    if value is int:
        return int64
    if value is float:
        return float64
    return from_numpy(np.dtype(value))


def of_python_scalar(value) -> dtype:
    """The dtype a Python or NumPy scalar counts as in promotion: bool, int64 or the
    default float (NumPy scalars are Python scalars to PyTorch too)."""
    if isinstance(value, float):
        return DEFAULT_FLOAT
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    return DEFAULT_FLOAT


# the ranks of operands in promotion
SCALAR, ZERO_DIM, DIMENSIONED = 0, 1, 2


def promote_types(a: dtype, b: dtype) -> dtype:
    """The narrowest dtype both `a` and `b` convert to without losing their category
    (torch.promote_types): floating beats integer beats bool, then the wider one wins;
    uint8 with a signed integer needs one wider than int8."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if uint8 in (a, b):  # and the other a signed integer
        signed = b if a is uint8 else a
        return int16 if signed is int8 else signed
    return a if a.itemsize >= b.itemsize else b


def promote(a: dtype, a_rank: int, b: dtype, b_rank: int) -> dtype:
    """The result dtype of a binary op (torch.result_type), each operand's rank being
    DIMENSIONED (a tensor with ndim > 0), ZERO_DIM (a 0-d tensor) or SCALAR (a Python
    number): a lower-ranked operand counts only when its category is higher."""
    if a is b:
        return a
    if a_rank == b_rank:
        return promote_types(a, b)
    high, low = (a, b) if a_rank > b_rank else (b, a)
    return low if low.category > high.category else high


class iinfo:  # noqa: N801  (torch.iinfo)
    """The limits of an integer dtype: bits, min, max, and dtype (its name)."""

    def __init__(self, type: dtype):  # noqa: A002  (PyTorch's argument name)
        if not isinstance(type, dtype) or type.category != 1:
            raise TypeError(f"iinfo: expected an integer dtype ({_names(1)}), got {type!r}")
        limits = np.iinfo(type.np)
        self.bits, self.min, self.max = limits.bits, int(limits.min), int(limits.max)
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


class finfo:  # noqa: N801  (torch.finfo)
    """The limits of a floating dtype (float32 by default): bits, eps (the gap between
    1 and the next number), max, min (= -max), tiny and smallest_normal (the smallest
    positive normal number), resolution (10 ** -decimal digits), and dtype (its name)."""

    def __init__(self, type: dtype = DEFAULT_FLOAT):  # noqa: A002  (PyTorch's argument name)
        if not isinstance(type, dtype) or not type.is_floating_point:
            raise TypeError(f"finfo: expected a floating dtype ({_names(2)}), got {type!r}")
        limits = np.finfo(type.np)
        self.bits = limits.bits
        self.eps, self.max, self.min = float(limits.eps), float(limits.max), float(limits.min)
        self.tiny = self.smallest_normal = float(limits.smallest_normal)
        self.resolution = 10.0 ** -limits.precision
        self.dtype = type.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


def _names(category: int) -> str:
    return ", ".join(d.name for d in ALL if d.category == category)
