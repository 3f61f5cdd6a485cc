"""Reading elements at positions: masked_select (under a mask), take (positions in the
flattened input) and take_along_dim (positions along one dim, broadcast like gather).

Each is indexing (x[mask], x.flatten()[index]) or gather, so their gradients are those
ops' own: the upstream gradient added back at the positions read.
"""
from __future__ import annotations

import numpy as np

from minigrad.ops.gather import gather
from minigrad.ops.operands import check_same_device, normalize_dim
from minigrad.tensor_base import TensorBase


def masked_select(input: TensorBase, mask: TensorBase) -> TensorBase:  # noqa: A002
    """The elements of input where the bool mask is True, as a vector in row-major order;
    input and mask broadcast together first."""
    if not isinstance(mask, TensorBase) or mask.array.dtype != np.bool_:
        dtype = mask.dtype if isinstance(mask, TensorBase) else type(mask).__name__
        raise RuntimeError(f"masked_select: expected a bool mask tensor, got {dtype}")
    check_same_device("masked_select", input, mask=mask)
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    except ValueError:
        raise RuntimeError(f"masked_select: mask of shape {tuple(mask.shape)} does not "
                           f"broadcast with the input's shape {tuple(input.shape)}") from None
    if tuple(input.shape) != shape:
        input = input.expand(*shape)  # noqa: A001
    if tuple(mask.shape) != shape:
        mask = mask.expand(*shape)
    return input[mask]


def take(input: TensorBase, index: TensorBase) -> TensorBase:  # noqa: A002
    """input read as a vector at the positions in index (negative ones count from the
    end); the result has index's shape."""
    check_index_tensor(index, "take")
    size = input.numel()
    _check_range(index.array, size, "take",
                 f"a tensor of {size} elements (shape {tuple(input.shape)})")
    return input.reshape(-1)[index]


def take_along_dim(input: TensorBase, indices: TensorBase,  # noqa: A002
                   dim: int | None = None) -> TensorBase:
    """Elements of input at the positions `indices` along dim (gather, with input and
    indices broadcast in every other dim, and negative positions counted from the end);
    with dim=None, input and indices are read as vectors."""
    check_index_tensor(indices, "take_along_dim")
    if dim is None:
        return take_along_dim(input.reshape(-1), indices.reshape(-1), 0)
    if indices.ndim != input.ndim:
        raise RuntimeError(
            f"take_along_dim: input and indices must have the same number of dims, got "
            f"shapes {tuple(input.shape)} and {tuple(indices.shape)}")
    dim = normalize_dim(dim, input.ndim, "take_along_dim")
    others = [1 if d == dim else n for d, n in enumerate(input.shape)]
    other_indices = [1 if d == dim else n for d, n in enumerate(indices.shape)]
    try:
        batch = np.broadcast_shapes(tuple(others), tuple(other_indices))
    except ValueError:
        raise RuntimeError(
            f"take_along_dim: input of shape {tuple(input.shape)} and indices of shape "
            f"{tuple(indices.shape)} do not broadcast outside dim {dim}") from None
    input = input.expand(*_with_size(batch, dim, input.shape[dim]))  # noqa: A001
    indices = indices.expand(*_with_size(batch, dim, indices.shape[dim]))
    return gather(input, dim, _counted_from_start(indices, input.shape[dim], dim))


def check_index_tensor(index, op: str) -> None:
    """TypeError or RuntimeError, naming op, unless index is an integer tensor."""
    if not isinstance(index, TensorBase):
        raise TypeError(f"{op}: index must be an int64 tensor, got {type(index).__name__}")
    if index.dtype.is_floating_point or index.array.dtype == np.bool_:
        raise RuntimeError(f"{op}: expected an int64 index tensor, got {index.dtype} of "
                           f"shape {tuple(index.shape)}")


def _counted_from_start(indices: TensorBase, size: int, dim: int) -> TensorBase:
    """indices in [-size, size) with the negative ones counted from the end of dim, or
    an IndexError naming the first outside that range."""
    positions = indices.array
    _check_range(positions, size, "take_along_dim", f"dim {dim} of size {size}")
    if positions.size and bool((positions < 0).any()):
        return indices._wrap(indices.xp.where(positions < 0, positions + size, positions))
    return indices


def _check_range(positions, size: int, op: str, what: str) -> None:
    """IndexError naming the first position outside [-size, size) of `what` is indexed."""
    outside = (positions < -size) | (positions >= size)
    if positions.size and bool(outside.any()):
        raise IndexError(f"{op}: index {int(positions[outside].reshape(-1)[0])} is out of "
                         f"range for {what}")


def _with_size(shape: tuple, dim: int, size: int) -> tuple:
    return tuple(size if d == dim else n for d, n in enumerate(shape))
