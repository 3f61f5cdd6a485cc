"""Writing slices at positions along one dim, or elements under a mask: index_add,
index_copy, index_fill and masked_scatter, and their in-place forms (index_add_, ...).

For dim=1 of a 3-D input and a vector `index`, slice i of the source lands at
out[:, index[i], :]:

    index_add:      out[:, index[i], :] += alpha * source[:, i, :]   (repeats all add up)
    index_copy:     out[:, index[i], :] = source[:, i, :]
    index_fill:     out[:, index[i], :] = value
    masked_scatter: the elements of out where mask is True take source's first elements,
                    in row-major order

Each is one write into a copy of the input at the advanced index (:, index, :) (or the
mask), so each reuses a Function of the indexing ops: index_add is IndexAdd (which adds
the repeats in an order fixed by the index, so the GPU repeats its bits) and the copies
are Scatter, whose gradients are the input's gradient with the written positions zeroed
and the source's gradient read back from them.
"""
from __future__ import annotations

import numpy as np

from minigrad.backend import to_device
from minigrad.determinism import alert_not_deterministic, are_deterministic_algorithms_enabled
from minigrad.ops.gather import Scatter
from minigrad.ops.in_place import in_place_form
from minigrad.ops.index_read import check_index_tensor
from minigrad.ops.indexing import IndexAdd
from minigrad.ops.operands import check_same_device, normalize_dim
from minigrad.tensor_base import TensorBase


def index_add(input: TensorBase, dim: int, index: TensorBase, source: TensorBase,  # noqa: A002
              *, alpha=1) -> TensorBase:
    """A copy of input with alpha * source's slice i added to the slice index[i] along
    dim; slices that repeat in index receive every one of theirs. source has input's
    shape and dtype except len(index) slices along dim."""
    if input.ndim == 0:  # as a vector of one element
        return index_add(input.reshape(1), dim, index, _vector(source), alpha=alpha).reshape(())
    dim, rows = _index_along(input, dim, index, "index_add")
    _check_source(input, dim, rows.size, source, "index_add")
    if alpha != 1:
        source = source * alpha
    return input + IndexAdd.apply(source, index=_positions(dim, rows), shape=input.shape)


def index_copy(input: TensorBase, dim: int, index: TensorBase,  # noqa: A002
               source: TensorBase) -> TensorBase:
    """A copy of input with its slice index[i] along dim replaced by source's slice i.
    Where index repeats a slice, one of its sources is written (on the GPU which one is
    up to CUDA, and mg.use_deterministic_algorithms(True) refuses it)."""
    if input.ndim == 0:
        return index_copy(input.reshape(1), dim, index, _vector(source)).reshape(())
    dim, rows = _index_along(input, dim, index, "index_copy")
    _check_source(input, dim, rows.size, source, "index_copy")
    if (are_deterministic_algorithms_enabled() and input.device.type != "cpu"
            and int(input.xp.unique(rows).size) < rows.size):
        alert_not_deterministic("index_copy on the GPU with an index that repeats a slice")
    return Scatter.apply(input, source, positions=_positions(dim, rows))


def index_fill(input: TensorBase, dim: int, index: TensorBase, value) -> TensorBase:  # noqa: A002
    """A copy of input with the slices index[i] along dim set to value (a number or a
    0-d tensor, converted to input's dtype; a 0-d tensor gets the gradient of every
    element it fills). Negative indices count from the end."""
    if input.ndim == 0:
        return index_fill(input.reshape(1), dim, index, value).reshape(())
    dim, rows = _index_along(input, dim, index, "index_fill", negative=True)
    rows = input.xp.unique(rows)  # a slice filled twice is filled once
    shape = list(input.shape)
    shape[dim] = rows.size
    if isinstance(value, TensorBase):
        if value.ndim != 0:
            raise RuntimeError(f"index_fill: value must be a number or a 0-d tensor, got "
                               f"a tensor of shape {tuple(value.shape)}")
        check_same_device("index_fill", input, value=value)
        filled = value.to(input.dtype).expand(*shape)
    else:
        filled = input._wrap(input.xp.full(shape, value, dtype=input.array.dtype))
    return Scatter.apply(input, filled, positions=_positions(dim, rows))


def masked_scatter(input: TensorBase, mask: TensorBase, source: TensorBase) -> TensorBase:  # noqa: A002
    """A copy of input (broadcast with mask) whose elements where the bool mask is True
    take source's first elements, in row-major order; source (any shape, input's dtype)
    must hold at least as many elements as the mask has True."""
    if not isinstance(mask, TensorBase) or mask.array.dtype != np.bool_:
        dtype = mask.dtype if isinstance(mask, TensorBase) else type(mask).__name__
        raise RuntimeError(f"masked_scatter: expected a bool mask tensor, got {dtype}")
    if not isinstance(source, TensorBase) or source.dtype != input.dtype:
        dtype = source.dtype if isinstance(source, TensorBase) else type(source).__name__
        raise RuntimeError(f"masked_scatter: expected source of the input's dtype "
                           f"{input.dtype}, got {dtype}")
    check_same_device("masked_scatter", input, mask=mask, source=source)
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    except ValueError:
        raise RuntimeError(f"masked_scatter: mask of shape {tuple(mask.shape)} does not "
                           f"broadcast with the input's shape {tuple(input.shape)}") from None
    positions = input.xp.broadcast_to(mask.array, shape)
    count = int(positions.sum())
    if source.numel() < count:
        raise RuntimeError(f"masked_scatter: the mask selects {count} elements but source "
                           f"(shape {tuple(source.shape)}) has only {source.numel()}")
    if tuple(input.shape) != shape:
        input = input.expand(*shape)  # noqa: A001
    return Scatter.apply(input, source.reshape(-1)[:count], positions=positions)


index_add_ = in_place_form(index_add, "index_add_")
index_copy_ = in_place_form(index_copy, "index_copy_")
index_fill_ = in_place_form(index_fill, "index_fill_")
masked_scatter_ = in_place_form(masked_scatter, "masked_scatter_")


def _index_along(x: TensorBase, dim: int, index: TensorBase, op: str,
                 negative: bool = False) -> tuple:
    """(dim, the index as a vector on x's device), after checking its dtype, dims and
    range ([0, size) of dim, or [-size, size) where negative indices are allowed, which
    come back counted from the end)."""
    dim = normalize_dim(dim, x.ndim, op)
    check_index_tensor(index, op)
    if index.ndim > 1:
        raise IndexError(f"{op}: index must be a vector (1-D or 0-d), got shape "
                         f"{tuple(index.shape)}")
    rows = to_device(index.array, x.device).reshape(-1)
    size = x.shape[dim]
    low = -size if negative else 0
    outside = (rows < low) | (rows >= size)
    if rows.size and bool(outside.any()):
        raise IndexError(f"{op}: index {int(rows[outside][0])} is out of bounds for dim "
                         f"{dim} with size {size} (input of shape {tuple(x.shape)})")
    return dim, (rows % size if negative and size else rows)


def _positions(dim: int, rows) -> tuple:
    """The advanced index of the slices `rows` along dim: (:, ..., :, rows)."""
    return (slice(None),) * dim + (rows,)


def _check_source(x: TensorBase, dim: int, count: int, source, op: str) -> None:
    if not isinstance(source, TensorBase):
        raise TypeError(f"{op}: source must be a tensor, got {type(source).__name__}")
    if source.dtype != x.dtype:
        raise RuntimeError(f"{op}: the input ({x.dtype}) and source ({source.dtype}) must "
                           "have the same dtype")
    check_same_device(op, x, source=source)
    expected = tuple(x.shape[:dim]) + (count,) + tuple(x.shape[dim + 1:])
    if tuple(source.shape) != expected:
        raise RuntimeError(
            f"{op}: source of shape {tuple(source.shape)} does not fit: expected "
            f"{expected}, the input's shape {tuple(x.shape)} with one slice per index "
            f"({count}) along dim {dim}")


def _vector(source):
    """A 0-d source of a 0-d input as a vector of one element (anything else as it is,
    for _check_source to judge)."""
    return source.reshape(1) if isinstance(source, TensorBase) and source.ndim == 0 else source
