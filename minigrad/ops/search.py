"""Finding positions and values: nonzero/argwhere, bucketize/searchsorted and unique.

Their outputs are int64 positions or counts, or (unique) a selection of the input's values,
and none has a gradient: they are made outside the graph, as PyTorch's are.
"""
from __future__ import annotations

import numpy as np

from minigrad.backend import array_module
from minigrad.ops.operands import binary_operands, normalize_dim
from minigrad.tensor_base import TensorBase


def nonzero(input: TensorBase, *, as_tuple: bool = False):  # noqa: A002  (torch's name)
    """The positions of the nonzero (True) elements in row-major order: an int64 tensor
    of shape (count, ndim), or with as_tuple=True one vector of positions per dim (a 0-d
    input counts as a vector of one element there, as in PyTorch)."""
    xp, data = input.xp, input.array
    if as_tuple:
        positions = xp.nonzero(data.reshape(1) if data.ndim == 0 else data)
        return tuple(input._wrap(p.astype(np.int64, copy=False)) for p in positions)
    positions = xp.argwhere(data).astype(np.int64, copy=False)
    return input._wrap(xp.ascontiguousarray(positions))


def argwhere(input: TensorBase) -> TensorBase:  # noqa: A002
    """nonzero(input): the (count, ndim) int64 positions of the nonzero elements."""
    return nonzero(input)


def bucketize(input, boundaries: TensorBase, *, out_int32: bool = False,  # noqa: A002
              right: bool = False) -> TensorBase:
    """The bucket of each element of input (a tensor or a number) among sorted 1-D
    boundaries: the i with boundaries[i-1] < x <= boundaries[i], or with right=True
    boundaries[i-1] <= x < boundaries[i]; int64 (int32 with out_int32=True), of input's
    shape."""
    if not isinstance(boundaries, TensorBase) or boundaries.ndim != 1:
        shape = tuple(boundaries.shape) if isinstance(boundaries, TensorBase) else None
        raise RuntimeError(
            f"bucketize: boundaries must be a 1-D tensor, got {shape or type(boundaries)}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def searchsorted(sorted_sequence: TensorBase, input, *, out_int32: bool = False,  # noqa: A002
                 right: bool = False, side: str | None = None,
                 sorter: TensorBase | None = None) -> TensorBase:
    """For each value of input (a tensor or a number), the index at which it would be
    inserted into sorted_sequence's last dim to keep it sorted: before equal elements
    (side="left", the default) or after them (side="right" or right=True). A sequence of
    more than one dim searches each row for the values of input's matching row (their
    leading dims must be equal). `sorter` holds the indices that sort an unsorted
    sequence along its last dim (the result indexes the sorted order). int64, or int32
    with out_int32=True."""
    side = _side(side, right)
    if not isinstance(input, TensorBase) and sorted_sequence.ndim != 1:
        raise RuntimeError(
            f"searchsorted: a number as input needs a 1-D sorted_sequence, got shape "
            f"{tuple(sorted_sequence.shape)}")
    rows, values = binary_operands(sorted_sequence, input)
    xp, rows, values = rows.xp, rows.array, values.array
    if sorter is not None:
        rows = _sorted_by(rows, sorter)
    if rows.ndim <= 1:
        found = xp.searchsorted(rows.reshape(-1), values, side=side)
    else:
        if rows.shape[:-1] != values.shape[:-1]:
            raise RuntimeError(
                "searchsorted: sorted_sequence must be 1-D or share all but its last dim "
                f"with input, got shapes {tuple(rows.shape)} and {tuple(values.shape)}")
        found = _search_rows(rows.reshape(-1, rows.shape[-1]),
                             values.reshape(-1, values.shape[-1]), side).reshape(values.shape)
    return sorted_sequence._wrap(xp.asarray(found, dtype=np.int32 if out_int32 else np.int64))


def unique(input: TensorBase, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None):
    """The distinct elements of input (flattened), or with dim its distinct slices along
    dim, in ascending order (also when sorted=False, which leaves the order free). With
    return_inverse, also the int64 position in the output of each element (slice), of
    input's shape (of length input.shape[dim]); with return_counts, how often each
    occurs. The values are outside the graph (PyTorch has no gradient for unique)."""
    xp = input.xp
    axis = None if dim is None else normalize_dim(dim, input.ndim, "unique")
    if axis is not None and input.ndim == 0:
        raise IndexError("unique: dim must be None for a 0-d input")
    # only what is asked for: the inverse costs NumPy an argsort, 13x a plain unique's sort
    found = xp.unique(input.array, return_inverse=return_inverse, return_counts=return_counts,
                      axis=axis)
    values, *extras = found if return_inverse or return_counts else (found,)
    if return_inverse:
        extras[0] = extras[0].reshape(input.array.shape if axis is None else -1)
    requested = [input._wrap(xp.asarray(a, dtype=np.int64)) for a in extras]
    out = input._wrap(values)
    return (out, *requested) if requested else out


def _side(side: str | None, right: bool) -> str:
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise RuntimeError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if right and side == "left":
        raise RuntimeError("searchsorted: side and right can't be set to opposites, got "
                           "side='left' with right=True")
    return side


def _sorted_by(rows, sorter: TensorBase):
    """rows rearranged along the last dim by the permutation `sorter` (same shape)."""
    order = sorter.array
    if order.shape != rows.shape or order.dtype.kind not in "iu":
        raise RuntimeError(
            f"searchsorted: sorter must be an integer tensor of sorted_sequence's shape "
            f"{tuple(rows.shape)}, got {sorter.dtype} of shape {tuple(order.shape)}")
    if order.size and bool(((order < 0) | (order >= rows.shape[-1])).any()):
        raise RuntimeError(
            f"searchsorted: sorter holds an index outside [0, {rows.shape[-1]}) (the "
            "length of sorted_sequence's last dim)")
    return sorter.xp.take_along_axis(rows, order, axis=-1)


def _search_rows(rows, values, side: str):
    """searchsorted for each row of rows (B, n) and the same row of values (B, m), in one
    1-D search: each number is replaced by its rank among all the numbers of both (equal
    numbers share a rank, order is kept), and row r's ranks are shifted by r times the
    count of ranks, so the keys of the rows, read in order, are sorted as one vector and
    a value's key lands inside its own row. Subtracting r * n gives the index in row r."""
    xp = array_module(rows)
    numbers = xp.unique(xp.concatenate([rows.reshape(-1), values.reshape(-1)]))
    row_ids = xp.arange(rows.shape[0]).reshape(-1, 1)
    row_keys = (xp.searchsorted(numbers, rows) + row_ids * numbers.size).reshape(-1)
    value_keys = xp.searchsorted(numbers, values) + row_ids * numbers.size
    return xp.searchsorted(row_keys, value_keys, side=side) - row_ids * rows.shape[1]
