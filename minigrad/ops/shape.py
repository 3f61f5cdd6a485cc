"""Ops that move elements without computing: reshape, permute, expand, cat and friends.
Their gradients move the gradient back the same way."""
from __future__ import annotations

import math
import operator

import numpy as np

from minigrad import dtypes
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.kernels.leading_sum import leading_sum
from minigrad.ops.operands import normalize_dim
from minigrad.tensor_base import TensorBase


class Reshape(Function):
    """out = x viewed with a new shape;  dx = g reshaped back"""

    is_view = True

    def forward(self, x, shape):
        self.input_shape = x.shape
        return x.reshape(shape)

    def backward(self, grad):
        return grad.reshape(self.input_shape)


class Permute(Function):
    """out = x with its dims reordered;  dx = g with the inverse order"""

    is_view = True

    def forward(self, x, dims):
        self.dims = dims
        return x.transpose(dims)

    def backward(self, grad):
        inverse = [0] * len(self.dims)
        for position, dim in enumerate(self.dims):
            inverse[dim] = position
        return grad.permute(*inverse)


class Transpose(Function):
    """out = x with dims d0 and d1 swapped;  dx = g with them swapped back"""

    is_view = True

    def forward(self, x, dim0, dim1):
        self.dims = dim0, dim1
        return x.swapaxes(dim0, dim1)

    def backward(self, grad):
        return transpose(grad, *self.dims)


class Expand(Function):
    """out = x broadcast to a shape (a read-only view);  the engine sums dx back"""

    is_view = True

    def forward(self, x, shape):
        return _broadcast_view(x, shape)

    def backward(self, grad):
        return grad


class SumToShape(Function):
    """out = x summed down to a broadcast-compatible shape;  dx = g expanded back.
    The adjoint of broadcasting, used by the engine for every broadcast input."""

    def forward(self, x, shape):
        self.input_shape = x.shape
        leading = x.ndim - len(shape)
        axes = tuple(range(leading)) + tuple(
            leading + i for i, n in enumerate(shape) if n == 1 and x.shape[leading + i] != 1
        )
        if axes and axes == tuple(range(len(axes))):  # only leading dims: a bias's gradient
            return leading_sum(x, len(axes)).reshape(shape)
        out = x.sum(axis=axes, keepdims=True) if axes else x
        return out.reshape(shape)

    def backward(self, grad):
        return broadcast_to(grad, self.input_shape)


class Copy(Function):
    """out = a contiguous copy of x;  dx = g"""

    def forward(self, x):
        return array_module(x).array(x, copy=True, order="C")

    def backward(self, grad):
        return grad


class Cat(Function):
    """out = inputs joined along `axis`;  each dx is its slice of g"""

    def forward(self, *arrays, axis=0):
        self.axis = axis
        self.sizes = [a.shape[axis] for a in arrays]
        return array_module(arrays[0]).concatenate(arrays, axis=axis)

    def backward(self, grad):
        grads, start = [], 0
        index = [slice(None)] * grad.ndim
        for size, needs in zip(self.sizes, self.needs_input_grad):
            index[self.axis] = slice(start, start + size)
            grads.append(grad[tuple(index)] if needs else None)
            start += size
        return tuple(grads)


def reshape(x: TensorBase, shape) -> TensorBase:
    """The same elements in `shape` (one size may be -1); a view when the layout
    allows, else a copy."""
    shape = _shape_argument(shape, "reshape")
    if shape == x.shape:
        return x
    if -1 in shape:  # one size inferred from the others
        known = math.prod(n for n in shape if n != -1)
        invalid = shape.count(-1) > 1 or known == 0 or x.array.size % known
    else:
        invalid = math.prod(shape) != x.array.size
    if invalid:
        raise RuntimeError(
            f"reshape: shape {list(shape)} is invalid for a tensor of shape "
            f"{tuple(x.shape)} ({x.array.size} elements)"
        )
    return Reshape.apply(x, shape=shape)


def permute(x: TensorBase, dims) -> TensorBase:
    """The dims reordered: output dim i is input dim dims[i] (a view)."""
    dims = tuple(normalize_dim(d, x.ndim, "permute") for d in _shape_argument(dims, "permute"))
    if sorted(dims) != list(range(x.ndim)):
        raise RuntimeError(
            f"permute: dims {list(dims)} are not a permutation of the {x.ndim} dims of a "
            f"tensor of shape {tuple(x.shape)}"
        )
    return Permute.apply(x, dims=dims)


def transpose(x: TensorBase, dim0: int, dim1: int) -> TensorBase:
    """Dims dim0 and dim1 swapped (a view)."""
    ndim = x.array.ndim
    dim0 = normalize_dim(dim0, ndim, "transpose")
    dim1 = normalize_dim(dim1, ndim, "transpose")
    return Transpose.apply(x, dim0=dim0, dim1=dim1)


def expand(x: TensorBase, sizes) -> TensorBase:
    """Broadcast to `sizes`; -1 keeps a dimension, new leading dims may be added."""
    sizes = _shape_argument(sizes, "expand")
    if sizes == x.shape:
        return x
    leading = len(sizes) - x.ndim
    if leading < 0:
        raise RuntimeError(
            f"expand: the number of sizes ({len(sizes)}) must be at least the number of "
            f"dims of the tensor of shape {tuple(x.shape)}"
        )
    shape = sizes if -1 not in sizes else tuple(
        x.shape[i - leading] if n == -1 and i >= leading else n for i, n in enumerate(sizes)
    )
    for i, n in enumerate(x.shape):
        if n != 1 and n != shape[leading + i]:
            raise RuntimeError(
                f"expand: cannot expand shape {tuple(x.shape)} to {shape}: dim {i} has "
                f"size {n}, expected 1 or {shape[leading + i]}"
            )
    return broadcast_to(x, shape)


def broadcast_to(x: TensorBase, shape: tuple) -> TensorBase:
    """expand() without its argument checks, for backward rules, whose shapes are right
    by construction."""
    return x if x.array.shape == shape else Expand.apply(x, shape=shape)


def _broadcast_view(x, shape: tuple):
    """x broadcast to `shape`, a read-only view. A C-contiguous NumPy array's view is made
    from strides directly: np.broadcast_to's Python-level checks cost more than the rest
    of a small op (expand() has checked the shapes already)."""
    if type(x) is not np.ndarray or not x.flags.c_contiguous or x.size == 0:
        return array_module(x).broadcast_to(x, shape)
    strides = [0] * (len(shape) - x.ndim)
    for n, stride in zip(x.shape, x.strides):
        strides.append(0 if n == 1 else stride)
    view = np.ndarray(shape, x.dtype, buffer=x, strides=strides)
    view.flags.writeable = False
    return view


def sum_to_size(x: TensorBase, *shape) -> TensorBase:
    """x summed over the dims it was broadcast along, down to `shape` (Tensor.sum_to_size)."""
    return SumToShape.apply(x, shape=_shape_argument(shape, "sum_to_size"))


def unsqueeze(x: TensorBase, dim: int) -> TensorBase:
    """A new dim of size 1 inserted at `dim` (a view)."""
    dim = normalize_dim(dim, x.ndim + 1, "unsqueeze")
    return Reshape.apply(x, shape=x.shape[:dim] + (1,) + x.shape[dim:])


def squeeze(x: TensorBase, dim=None) -> TensorBase:
    """Dims of size 1 removed: all of them, or those of `dim` (an int or a tuple)."""
    if dim is None:
        shape = tuple(n for n in x.shape if n != 1)
    else:
        dim = normalize_dim(dim, x.ndim, "squeeze")
        if x.ndim == 0 or x.shape[dim] != 1:
            return x
        shape = x.shape[:dim] + x.shape[dim + 1:]
    return x if shape == x.shape else Reshape.apply(x, shape=shape)


def flatten(x: TensorBase, start_dim: int = 0, end_dim: int = -1) -> TensorBase:
    """Dims start_dim to end_dim merged into one."""
    if x.ndim == 0:
        return reshape(x, (1,))
    start = normalize_dim(start_dim, x.ndim, "flatten")
    end = normalize_dim(end_dim, x.ndim, "flatten")
    shape = x.shape[:start] + (math.prod(x.shape[start:end + 1]),) + x.shape[end + 1:]
    return reshape(x, shape)


def contiguous(x: TensorBase) -> TensorBase:
    """x itself if its elements lie in row-major order, else a row-major copy."""
    if x.array.flags.c_contiguous:
        return x
    return Copy.apply(x)


def clone(x: TensorBase) -> TensorBase:
    """A row-major copy of x (differentiable: the gradient passes through)."""
    return Copy.apply(x)


def cat(tensors, dim: int = 0) -> TensorBase:
    """Join tensors along an existing dim (their other dims must match)."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat: expected a non-empty list of tensors")
    first = tensors[0]
    axis = normalize_dim(dim, first.ndim, "cat")
    for t in tensors[1:]:
        if t.ndim != first.ndim or any(
            a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != axis
        ):
            raise RuntimeError(
                f"cat: sizes must match except in dim {axis}; got shapes "
                f"{[tuple(t.shape) for t in tensors]}"
            )
    return Cat.apply(*_same_dtype(tensors), axis=axis)


def stack(tensors, dim: int = 0) -> TensorBase:
    """Join same-shaped tensors along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack: expected a non-empty list of tensors")
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        raise RuntimeError(f"stack: expects tensors of equal shape, got {sorted(shapes)}")
    dim = normalize_dim(dim, tensors[0].ndim + 1, "stack")
    return cat([unsqueeze(t, dim) for t in tensors], dim)


def split(x: TensorBase, split_size, dim: int = 0) -> tuple:
    """Pieces of `split_size` along dim (the last may be smaller), or of the given sizes."""
    dim = normalize_dim(dim, x.ndim, "split")
    length = x.shape[dim]
    if isinstance(split_size, int):
        sizes = [min(split_size, length - start) for start in range(0, length, split_size)]
    else:
        sizes = list(split_size)
        if sum(sizes) != length:
            raise RuntimeError(f"split: sizes {sizes} do not sum to dim {dim}'s size {length}")
    pieces, start = [], 0
    index = [slice(None)] * x.ndim
    for size in sizes:
        index[dim] = slice(start, start + size)
        pieces.append(x[tuple(index)])
        start += size
    return tuple(pieces)


def chunk(x: TensorBase, chunks: int, dim: int = 0) -> tuple:
    """x split into `chunks` pieces of equal size along `dim` (the last may be smaller)."""
    length = x.shape[normalize_dim(dim, x.ndim, "chunk")]
    return split(x, max(1, -(-length // chunks)), dim)


def _shape_argument(shape, op: str) -> tuple:
    """Accept f(2, 3), f((2, 3)) and f([2, 3]) with integer sizes (NumPy integers and
    integer tensors too, as in PyTorch; a float is an error, not truncated)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    for n in shape:
        if n.__class__ is not int:
            return tuple([_size(n, op) for n in shape])
    return tuple(shape)


def _size(n, op: str) -> int:
    try:
        return operator.index(n)
    except TypeError:
        raise TypeError(f"{op}: sizes and dims must be integers, got {n!r} of type "
                        f"{type(n).__name__}") from None


def _same_dtype(tensors: list) -> list:
    result = tensors[0].dtype
    for t in tensors[1:]:
        result = dtypes.promote_types(result, t.dtype)
    return [t if t.dtype is result else t.to(result) for t in tensors]
