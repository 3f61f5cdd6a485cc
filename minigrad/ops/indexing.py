"""Indexing: x[index] with slices (any step), None, ..., integer arrays and bool masks,
and the in-place writes `x[index] = v`, `add_`, `mul_`, ... (outside the graph)."""
from __future__ import annotations

import numpy as np

from minigrad import kernels
from minigrad.autograd.function import Function
from minigrad.autograd.grad_mode import MODES
from minigrad.backend import array_module, device_of, to_device
from minigrad.tensor_base import TensorBase


class GetItem(Function):
    """out = x[index];  dx = zeros like x with g scatter-added at index
    (added, not assigned, so an index that repeats collects every gradient)"""

    is_view = True

    def forward(self, x, index):
        self.index = index
        self.input_shape = x.shape
        return x[index]

    def backward(self, grad):
        return IndexAdd.apply(grad, index=self.index, shape=self.input_shape)


class GatherItem(GetItem):
    """x[index] with integer arrays or masks: NumPy returns a copy, so unlike a basic
    index the output has its own version counter"""

    is_view = False


class IndexAdd(Function):
    """out = zeros(shape) with g added at index (the adjoint of GetItem);  dg = dout[index]
    (positions that repeat get the sum of their gradients, added in an order fixed by the
    index, so that GPU runs repeat exactly: kernels/segment_sum.py)"""

    def forward(self, grad, index, shape):
        self.index = index
        if _is_basic(index):
            out = array_module(grad).zeros(shape, dtype=grad.dtype)
            out[index] = grad  # basic indexing never repeats an element
            return out
        return kernels.index_add(shape, index, grad)

    def backward(self, grad):
        return GetItem.apply(grad, index=self.index)


def getitem(x: TensorBase, index) -> TensorBase:
    index = _to_array_index(index, x)
    basic = _is_basic(index)
    if not basic:
        _check_index_arrays_in_range(index, x)
    try:
        function = GetItem if basic else GatherItem
        return function.apply(x, index=index)
    except RuntimeError as exc:
        raise IndexError(
            f"index {_describe(index)} is out of range or invalid for a tensor of shape "
            f"{tuple(x.shape)}: {exc.__cause__ or exc}"
        ) from exc


def setitem_(x: TensorBase, index, value) -> None:
    """x[index] = value, in place (a value on another device is copied over, as copy_
    does)."""
    check_inplace(x, "setitem")
    index = _to_array_index(index, x)
    if not _is_basic(index):
        _check_index_arrays_in_range(index, x)
    value = _operand(value, x, "setitem", copies=True)
    try:
        x.array[index] = value
    except (IndexError, ValueError) as exc:
        raise IndexError(
            f"setitem: cannot assign a value of shape {getattr(value, 'shape', ())} to index "
            f"{_describe(index)} of a tensor of shape {tuple(x.shape)}: {exc}"
        ) from exc
    x._version[0] += 1


def inplace(x: TensorBase, op: str, value, mask=None, low=None, high=None) -> TensorBase:
    """Apply an in-place update to x's array and bump its version (see Tensor.add_)."""
    check_inplace(x, op + "_")
    xp = x.xp
    operand = _operand(value, x, op + "_", copies=op in ("copy", "masked_fill"))
    data = x.array
    try:
        if op == "add":
            data += operand
        elif op == "sub":
            data -= operand
        elif op == "mul":
            data *= operand
        elif op == "div":
            data /= operand
        elif op == "copy":
            data[...] = operand
        elif op == "masked_fill":
            mask_array = _operand(mask, x, "masked_fill_", copies=False, what="the mask")
            data[...] = xp.where(mask_array, operand, data)
        elif op == "clamp":
            xp.clip(data, low, high, out=data)
    except (ValueError, TypeError) as exc:
        raise RuntimeError(
            f"{op}_: cannot update a tensor of shape {tuple(x.shape)} ({x.dtype}) with a "
            f"value of shape {tuple(getattr(operand, 'shape', ()))}: {exc}"
        ) from exc
    x._version[0] += 1
    return x


def _operand(value, x: TensorBase, op: str, copies: bool, what: str = "the value"):
    """The raw array (or Python scalar) of an in-place update of x. An array on another
    device is copied to x's when the update writes it (copy_, x[i] = v: PyTorch copies
    across devices there) and refused, naming both devices, when it is combined with x
    (add_, a mask). Lists become arrays on x's device."""
    array = value.array if isinstance(value, TensorBase) else value
    if isinstance(array, (list, tuple)):
        return x.xp.asarray(array)
    if not hasattr(array, "shape") or isinstance(array, np.generic):
        return array  # a Python or NumPy scalar
    source = device_of(array)
    if source == x.device:
        return array
    if copies:
        return to_device(array, x.device)
    raise RuntimeError(
        f"{op}: expected all tensors on the same device, got the tensor on {x.device} "
        f"and {what} on {source}"
    )


def check_inplace(x: TensorBase, op: str) -> None:
    if MODES.grad_enabled and x._requires_grad:
        kind = "a leaf tensor" if x.grad_fn is None else "a tensor in the graph"
        raise RuntimeError(
            f"{op}: {kind} that requires grad (shape {tuple(x.shape)}) cannot be changed in "
            "place while grad mode is on; wrap the update in `with mg.no_grad():` or use an "
            "out-of-place op"
        )


def _to_array_index(index, x: TensorBase):
    """Replace tensors inside an index by their arrays (on x's device)."""
    if isinstance(index, tuple):
        return tuple(_index_part(part, x) for part in index)
    return _index_part(index, x)


def _index_part(part, x: TensorBase):
    if isinstance(part, TensorBase):
        if part.dtype.is_floating_point:
            raise IndexError(
                f"tensors used as indices must be int64 or bool, got {part.dtype} of shape "
                f"{tuple(part.shape)}"
            )
        return to_device(part.array, x.device)  # an index may live on the other device
    if isinstance(part, (list, np.ndarray)):  # a NumPy index moves to a GPU tensor's device
        return x.xp.asarray(part)
    return part


def _check_index_arrays_in_range(index, x: TensorBase) -> None:
    """Raise IndexError, with NumPy's message, for an integer-array index out of range.
    NumPy checks itself; CuPy wraps such indices around instead, so on the GPU the check
    is made here (one device sync per index array)."""
    if x.array.__class__ is np.ndarray:
        return
    parts = index if isinstance(index, tuple) else (index,)
    explicit = sum(_dims_indexed(p) for p in parts)
    axis = 0
    for part in parts:
        if part is Ellipsis:
            axis += x.ndim - explicit
            continue
        is_array = hasattr(part, "dtype") and not isinstance(part, np.generic)
        if is_array and part.dtype.kind in "iu" and axis < x.ndim:
            size = x.shape[axis]
            outside = (part < -size) | (part >= size)
            if bool(outside.any()):
                raise IndexError(
                    f"index {_describe(index)} is out of range or invalid for a tensor of "
                    f"shape {tuple(x.shape)}: index {int(part[outside][0])} is out of bounds "
                    f"for axis {axis} with size {size}"
                )
        axis += _dims_indexed(part)


def _dims_indexed(part) -> int:
    """How many dims of the indexed tensor an index part consumes."""
    if part is None or part is Ellipsis:
        return 0
    if getattr(part, "dtype", None) is not None and part.dtype.kind == "b":
        return part.ndim
    return 1


def _is_basic(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, slice)) for p in parts)


def _describe(index) -> str:
    parts = index if isinstance(index, tuple) else (index,)
    return "[" + ", ".join(
        f"array{tuple(p.shape)}" if hasattr(p, "shape") and p.ndim else repr(p) for p in parts
    ) + "]"
