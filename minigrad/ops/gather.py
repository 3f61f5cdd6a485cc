"""Reading and writing elements along one dim at positions an index tensor names: gather,
scatter, scatter_add and index_select, with PyTorch's semantics.

For a 3-D input and dim=1, gather reads and scatter writes these positions:

    gather:  out[i][j][k] = x[i][index[i][j][k]][k]
    scatter: out[i][index[i][j][k]][k] = src[i][j][k]

Both are NumPy advanced indexing with the tuple `_positions(index, dim)`, so their
gradients are the ones getitem already has: reading is GatherItem, and its adjoint,
adding into zeros, is IndexAdd (repeated positions collect every gradient).
"""
from __future__ import annotations

from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.backend import array_module, to_device
from minigrad.determinism import alert_not_deterministic, are_deterministic_algorithms_enabled
from minigrad.ops.indexing import GatherItem, IndexAdd, inplace
from minigrad.ops.operands import normalize_dim
from minigrad.tensor_base import TensorBase


class Scatter(Function):
    """out = x with out[positions] = src (where positions repeat, one of the values is
    written, as in PyTorch: on the GPU which one is up to CUDA, and
    mg.use_deterministic_algorithms(True) refuses it);
    dx = g with the written positions zeroed,  dsrc = g[positions]"""

    def forward(self, x, src, positions):
        self.positions = positions
        out = x.copy()
        out[positions] = src
        return out

    def backward(self, grad):
        grad_x = grad_src = None
        if self.needs_input_grad[0]:
            kept = array_module(grad.array).ones(grad.array.shape, dtype=grad.array.dtype)
            kept[self.positions] = 0
            grad_x = grad * grad._wrap(kept)
        if self.needs_input_grad[1]:
            grad_src = GatherItem.apply(grad, index=self.positions)
        return grad_x, grad_src


def gather(x: TensorBase, dim: int, index: TensorBase) -> TensorBase:
    """out[i][j][k] = x[i][index[i][j][k]][k] for dim=1 (and likewise for any dim); the
    output has index's shape. index must have x's number of dims and, apart from `dim`,
    sizes no larger than x's."""
    if x.ndim == 0:  # as a 1-element vector
        return gather(x.reshape(1), dim, index.reshape(-1)).reshape(index.shape)
    dim, positions = _positions_in(x, dim, index, "gather")
    return GatherItem.apply(x, index=positions)


def scatter(x: TensorBase, dim: int, index: TensorBase, src=None, *, value=None,
            reduce: str | None = None) -> TensorBase:
    """A copy of x with out[i][index[i][j][k]][k] = src[i][j][k] for dim=1 (src may be a
    tensor or a number; `value=` is the number form). reduce="add" is scatter_add."""
    if reduce == "add":
        return scatter_add(x, dim, index, src)
    if reduce is not None:
        raise ValueError(f"scatter: reduce must be None or 'add', got {reduce!r}")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter: expected src (a tensor or a number) or value=")
    if x.ndim == 0:  # as a 1-element vector
        if isinstance(src, TensorBase):
            src = src.reshape(-1)
        return scatter(x.reshape(1), dim, index.reshape(-1), src).reshape(())
    dim, positions = _positions_in(x, dim, index, "scatter")
    if (are_deterministic_algorithms_enabled() and isinstance(src, TensorBase)
            and x.device.type != "cpu" and _repeats(positions, x.shape)):
        alert_not_deterministic("scatter of a tensor on the GPU with an index that repeats "
                                "a position")
    src = _source(x, src, index, "scatter")
    return Scatter.apply(x, src.to(x.dtype), positions=positions)


@autocast_op("scatter_add")
def scatter_add(x: TensorBase, dim: int, index: TensorBase, src: TensorBase) -> TensorBase:
    """A copy of x with src[i][j][k] added at out[i][index[i][j][k]][k] for dim=1;
    positions that repeat receive the sum of their values."""
    if not isinstance(src, TensorBase):
        raise TypeError(f"scatter_add: src must be a tensor, got {type(src).__name__}")
    if x.ndim == 0:  # as a 1-element vector
        return scatter_add(x.reshape(1), dim, index.reshape(-1), src.reshape(-1)).reshape(())
    dim, positions = _positions_in(x, dim, index, "scatter_add")
    src = _source(x, src, index, "scatter_add").to(x.dtype)
    return x + IndexAdd.apply(src, index=positions, shape=x.shape)


def scatter_(x: TensorBase, dim: int, index: TensorBase, src=None, *, value=None,
             reduce: str | None = None) -> TensorBase:
    """In-place scatter (outside the graph, like every in-place op)."""
    return inplace(x, "copy", scatter(x.detach(), dim, index, src, value=value,
                                      reduce=reduce))


def scatter_add_(x: TensorBase, dim: int, index: TensorBase, src: TensorBase) -> TensorBase:
    """In-place scatter_add (outside the graph, like every in-place op)."""
    return inplace(x, "copy", scatter_add(x.detach(), dim, index, src.detach()))


def index_select(x: TensorBase, dim: int, index: TensorBase) -> TensorBase:
    """The slices of x at the positions `index` (a vector of ints) along dim:
    out.shape[dim] == len(index)."""
    if x.ndim == 0:  # as a 1-element vector, giving a 0-d result
        if index.array.size != 1:
            raise IndexError(f"index_select: a 0-d input takes exactly one index, got "
                             f"shape {tuple(index.shape)}")
        return index_select(x.reshape(1), dim, index.reshape(1)).reshape(())
    dim = normalize_dim(dim, x.ndim, "index_select")
    index_array = _index_array(x, index, "index_select")
    if index_array.ndim > 1:
        raise IndexError(
            f"index_select: index must be a vector (1-D or 0-d), got shape "
            f"{tuple(index_array.shape)}"
        )
    index_array = index_array.reshape(-1)
    _check_range(index_array, x.shape[dim], dim, x, "index_select")
    return GatherItem.apply(x, index=(slice(None),) * dim + (index_array,))


def _positions_in(x: TensorBase, dim: int, index: TensorBase, op: str) -> tuple:
    """Check index against x for gather/scatter (dtype, dims, sizes, range) and return
    (dim, the advanced index of the positions it names)."""
    dim = normalize_dim(dim, x.ndim, op)
    index_array = _index_array(x, index, op)
    if index_array.ndim != x.ndim:
        raise RuntimeError(
            f"{op}: index must have as many dims as the input; got index of shape "
            f"{tuple(index_array.shape)} for input of shape {tuple(x.shape)}"
        )
    for d, (n_index, n_input) in enumerate(zip(index_array.shape, x.shape)):
        if d != dim and n_index > n_input:
            raise RuntimeError(
                f"{op}: index of shape {tuple(index_array.shape)} is larger than the input "
                f"of shape {tuple(x.shape)} at dim {d} (only dim {dim} may differ)"
            )
    _check_range(index_array, x.shape[dim], dim, x, op)
    return dim, _positions(index_array, dim)


def _positions(index, dim: int) -> tuple:
    """The advanced index that pairs each element of `index` with the position
    (i_0, .., index[i_0, .., i_n], .., i_n): the index itself at `dim`, and at every other
    dim d an arange over index.shape[d], shaped to broadcast against it."""
    xp = array_module(index)
    ndim = index.ndim
    return tuple(
        index if d == dim else xp.arange(n).reshape([-1 if i == d else 1 for i in range(ndim)])
        for d, n in enumerate(index.shape)
    )


def _repeats(positions: tuple, shape: tuple) -> bool:
    """True when two entries of the advanced index `positions` name one element of an
    array of `shape` (its C-order offsets, sum of position * stride, repeat)."""
    offsets, stride = 0, 1
    for position, size in zip(reversed(positions), reversed(shape)):
        offsets = offsets + position * stride
        stride *= size
    offsets = offsets.reshape(-1)
    return int(array_module(offsets).unique(offsets).size) < offsets.size


def _index_array(x: TensorBase, index, op: str):
    """The index tensor's array on x's device, or an error naming what was expected."""
    if not isinstance(index, TensorBase):
        raise TypeError(f"{op}: index must be an int64 tensor, got {type(index).__name__}")
    if index.dtype.is_floating_point or index.dtype.name == "bool":
        raise RuntimeError(
            f"{op}: expected an int64 index tensor, got {index.dtype} of shape "
            f"{tuple(index.shape)}"
        )
    return to_device(index.array, x.device)


def _check_range(index, size: int, dim: int, x: TensorBase, op: str) -> None:
    if not index.size:
        return
    outside = (index < 0) | (index >= size)
    if bool(outside.any()):
        bad = int(index[outside].reshape(-1)[0])
        raise IndexError(
            f"{op}: index {bad} is out of bounds for dim {dim} with size {size} (input of "
            f"shape {tuple(x.shape)}, index of shape {tuple(index.shape)})"
        )


def _source(x: TensorBase, src, index: TensorBase, op: str) -> TensorBase:
    """src as a tensor cut to index's shape (PyTorch reads only that corner of it); a
    number becomes a constant of index's shape."""
    if not isinstance(src, TensorBase):
        xp = x.xp
        return x._wrap(xp.full(index.array.shape, src, dtype=x.array.dtype))
    if src.ndim != index.ndim or any(s < n for s, n in zip(src.shape, index.shape)):
        raise RuntimeError(
            f"{op}: src of shape {tuple(src.shape)} must have index's number of dims and "
            f"be at least as large as index (shape {tuple(index.shape)}) in every dim"
        )
    if tuple(src.shape) == tuple(index.shape):
        return src
    return src[tuple(slice(0, n) for n in index.shape)]
