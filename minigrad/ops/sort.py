"""Ordering: sort, argsort and topk. The order is found on the arrays (it has no gradient);
the values are then read with gather, whose gradient puts each value's gradient back at
the position it came from."""
from __future__ import annotations

from collections import namedtuple

from minigrad.backend import array_module
from minigrad.ops.gather import gather
from minigrad.ops.operands import normalize_dim
from minigrad.tensor_base import TensorBase

SortResult = namedtuple("SortResult", ["values", "indices"])  # like torch.return_types.sort
TopkResult = namedtuple("TopkResult", ["values", "indices"])


def sort(x: TensorBase, dim: int = -1, descending: bool = False, stable: bool = False):
    """(values, indices) of x sorted along dim. The sort is always stable: equal values
    keep their order (PyTorch promises that only with stable=True). NaN sorts as the
    largest value."""
    indices = argsort(x, dim, descending, stable)
    return SortResult(gather(x, _dim(x, dim, "sort"), indices), indices)


def argsort(x: TensorBase, dim: int = -1, descending: bool = False,
            stable: bool = False) -> TensorBase:
    """The int64 indices that sort x along dim (stable, see sort)."""
    axis = _dim(x, dim, "argsort")
    if x.ndim == 0:
        return x._wrap(x.xp.zeros((), dtype=x.xp.int64))
    return x._wrap(_stable_argsort(x.array, axis, descending).astype(x.xp.int64, copy=False))


def topk(x: TensorBase, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """(values, indices) of the k largest (or, largest=False, smallest) elements along
    dim, in order (largest first, or smallest first). Which of several equal values is
    picked is unspecified, as in PyTorch."""
    axis = _dim(x, dim, "topk")
    size = x.shape[axis] if x.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(
            f"topk: k={k} is out of range for dim {axis} of size {size} (input of shape "
            f"{tuple(x.shape)})"
        )
    if x.ndim == 0:
        return TopkResult(x, argsort(x))
    indices = x._wrap(_top_indices(x.array, k, axis, largest).astype(x.xp.int64, copy=False))
    return TopkResult(gather(x, axis, indices), indices)


def _dim(x: TensorBase, dim: int, op: str) -> int:
    return normalize_dim(dim, x.ndim, op)


def _stable_argsort(data, axis: int, descending: bool):
    """argsort that keeps equal values in their original order, in either direction."""
    xp = array_module(data)
    if not descending:
        return xp.argsort(data, axis=axis, kind="stable")
    # an ascending stable sort of the reversed array, read backwards, is descending with
    # ties in original order; reversed positions p map back to n - 1 - p. (Sorting -data
    # instead would fail for bools, the smallest integer and -0.0.)
    last = data.shape[axis] - 1
    reversed_order = xp.argsort(xp.flip(data, axis), axis=axis, kind="stable")
    return last - xp.flip(reversed_order, axis)


def _top_indices(data, k: int, axis: int, largest: bool):
    """Indices of the k extreme values along axis, most extreme first: a partition
    (linear time) picks them, and only those k are sorted."""
    xp = array_module(data)
    size = data.shape[axis]
    if k == 0:
        shape = list(data.shape)
        shape[axis] = 0
        return xp.zeros(shape, dtype=xp.int64)
    if k < size:
        partition = xp.argpartition(data, size - k if largest else k - 1, axis=axis)
        keep = xp.arange(size - k, size) if largest else xp.arange(k)
        candidates = xp.take(partition, keep, axis=axis)
    else:
        candidates = xp.broadcast_to(
            xp.arange(size).reshape([-1 if d == axis else 1 for d in range(data.ndim)]),
            data.shape,
        )
    values = xp.take_along_axis(data, candidates, axis=axis)
    order = _stable_argsort(values, axis, descending=largest)
    return xp.take_along_axis(candidates, order, axis=axis)
