"""Views and pieces: view (which, as in PyTorch, never copies), the *_as forms, and
select, narrow and unbind, which are basic indexing and so share the input's memory."""
from __future__ import annotations

import math

from minigrad import dtypes
from minigrad.ops.operands import normalize_dim
from minigrad.ops.shape import _shape_argument, expand, reshape
from minigrad.tensor_base import TensorBase


def view(x: TensorBase, *shape) -> TensorBase:
    """x with a new shape over the same memory: x.view(2, 3) or x.view((2, 3)), -1 for
    one inferred size. Raises where that needs a copy (a transposed tensor flattened,
    say); reshape() copies then."""
    if len(shape) == 1 and isinstance(shape[0], (dtypes.dtype, type)):
        raise TypeError(
            f"view: reinterpreting the bytes as another dtype ({shape[0]}) is not supported; "
            "use .to(dtype) to convert the values"
        )
    shape = _shape_argument(shape, "view")
    target = _inferred(shape, x.array.size)
    if target is not None and not _viewable(x.array.shape, x.array.strides, target):
        raise RuntimeError(
            f"view: shape {list(shape)} is not compatible with the input's shape "
            f"{tuple(x.shape)} and strides {_element_strides(x)}: at least one dimension "
            "spans across two contiguous subspaces. Use .reshape(...) instead (it copies "
            "when it must), or call .contiguous() first."
        )
    return reshape(x, shape)


def view_as(x: TensorBase, other: TensorBase) -> TensorBase:
    """x.view(other.shape)"""
    return view(x, tuple(other.shape))


def reshape_as(x: TensorBase, other: TensorBase) -> TensorBase:
    """x.reshape(other.shape)"""
    return reshape(x, tuple(other.shape))


def expand_as(x: TensorBase, other: TensorBase) -> TensorBase:
    """x.expand(other.shape)"""
    return expand(x, tuple(other.shape))


def select(x: TensorBase, dim: int, index: int) -> TensorBase:
    """The slice at position `index` of dim, which it removes: x.select(1, 2) is x[:, 2]."""
    dim = normalize_dim(dim, x.ndim, "select")
    size = x.shape[dim]
    if not -size <= index < size:
        raise IndexError(
            f"select: index {index} is out of range for dim {dim} of size {size} (input of "
            f"shape {tuple(x.shape)})"
        )
    return x[(slice(None),) * dim + (index,)]


def narrow(x: TensorBase, dim: int, start: int, length: int) -> TensorBase:
    """The `length` elements of dim from `start` on: x.narrow(0, 1, 2) is x[1:3]."""
    dim = normalize_dim(dim, x.ndim, "narrow")
    size = x.shape[dim]
    if start < 0:
        start += size
    if not (0 <= start <= size and 0 <= length <= size - start):
        raise IndexError(
            f"narrow: start {start} and length {length} do not fit in dim {dim} of size "
            f"{size} (input of shape {tuple(x.shape)})"
        )
    return x[(slice(None),) * dim + (slice(start, start + length),)]


def unbind(x: TensorBase, dim: int = 0) -> tuple:
    """The slices along dim, each without that dim: q, k, v = qkv.unbind(0)."""
    dim = normalize_dim(dim, x.ndim, "unbind")
    return tuple(x[(slice(None),) * dim + (i,)] for i in range(x.shape[dim]))


def _inferred(shape: tuple, size: int) -> tuple | None:
    """shape with -1 replaced, or None when it cannot be (reshape names the error)."""
    if -1 not in shape:
        return shape
    known = math.prod(n for n in shape if n != -1)
    if shape.count(-1) > 1 or known == 0 or size % known:
        return None
    return tuple(size // known if n == -1 else n for n in shape)


def _viewable(shape: tuple, strides: tuple, target: tuple) -> bool:
    """Whether memory laid out with (shape, strides) can be read as `target` without a
    copy. The old dims fall into runs that are contiguous among themselves (a dim's stride
    is the next dim's stride times its size); a view may split or merge dims only within a
    run. Walk both shapes, pairing the shortest groups of old and new dims with equal
    element counts, and check each old group lies inside one run."""
    if math.prod(shape) == 0 or math.prod(target) != math.prod(shape):
        return True  # empty, or a size mismatch that reshape reports
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]  # size-1 dims have no layout
    new = [n for n in target if n != 1]
    i = j = 0
    while i < len(old) and j < len(new):
        old_end, new_end = i + 1, j + 1
        old_count, new_count = old[i][0], new[j]
        while old_count != new_count:
            if old_count < new_count:
                old_count *= old[old_end][0]
                old_end += 1
            else:
                new_count *= new[new_end]
                new_end += 1
        for k in range(i, old_end - 1):
            if old[k][1] != old[k + 1][1] * old[k + 1][0]:
                return False
        i, j = old_end, new_end
    return True


def _element_strides(x: TensorBase) -> tuple:
    return tuple(s // x.array.itemsize for s in x.array.strides)
