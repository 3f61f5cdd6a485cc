"""Tensor type names: PyTorch's older spelling of a dtype and a device together.

`x.type()` names a float32 tensor on the CPU "minigrad.FloatTensor" and one on the GPU
"minigrad.cuda.FloatTensor" (PyTorch says "torch.FloatTensor"; both spellings are read).
The constructors of the same names, mg.FloatTensor and friends, are in tensor_types.py.
"""
from __future__ import annotations

import re

from minigrad import dtypes
from minigrad.backend import Device, as_device

# dtype -> the name of its tensor type (PyTorch's)
NAMES = {
    dtypes.bool_: "BoolTensor",
    dtypes.uint8: "ByteTensor",
    dtypes.int8: "CharTensor",
    dtypes.int16: "ShortTensor",
    dtypes.int32: "IntTensor",
    dtypes.int64: "LongTensor",
    dtypes.float16: "HalfTensor",
    dtypes.float32: "FloatTensor",
    dtypes.float64: "DoubleTensor",
}
_DTYPE_OF_NAME = {name: dtype for dtype, name in NAMES.items()}
_TYPE_STRING = re.compile(r"(?:minigrad|torch)\.(?P<cuda>cuda\.)?(?P<name>[A-Za-z]+Tensor)")


def type_name(dtype: dtypes.dtype, where: Device) -> str:
    """'minigrad.FloatTensor' for float32 on the CPU, 'minigrad.cuda.FloatTensor' on the
    GPU, and so on."""
    cuda = "cuda." if where.type == "cuda" else ""
    return f"minigrad.{cuda}{NAMES[dtype]}"


def parse_type(value, caller: str) -> tuple[dtypes.dtype, Device | None]:
    """The dtype and device (None: keep the tensor's) that `value` names: a dtype, a
    tensor type such as mg.IntTensor or mg.cuda.IntTensor (a class with PyTorch's `dtype`
    and `is_cuda`), or a type name: 'minigrad.IntTensor', 'torch.cuda.IntTensor', ...
    A device is placed: naming the GPU where CUDA is unusable raises RuntimeError."""
    if isinstance(value, dtypes.dtype):
        return value, None
    if isinstance(value, type) and isinstance(getattr(value, "dtype", None), dtypes.dtype):
        return value.dtype, as_device("cuda" if value.is_cuda else "cpu")
    expected = ("a dtype, a tensor type such as mg.FloatTensor, or its name: "
                "'minigrad.FloatTensor', 'minigrad.cuda.FloatTensor' (or 'torch.FloatTensor')")
    if not isinstance(value, str):
        raise TypeError(f"{caller}: expected {expected}, got {value!r}")
    match = _TYPE_STRING.fullmatch(value)
    if match is None or match["name"] not in _DTYPE_OF_NAME:
        raise ValueError(f"{caller}: invalid type {value!r}: expected {expected}")
    return _DTYPE_OF_NAME[match["name"]], as_device("cuda" if match["cuda"] else "cpu")
