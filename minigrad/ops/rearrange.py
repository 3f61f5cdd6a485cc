"""Rearranging copies of a tensor's elements: flip, roll, repeat, tile and
repeat_interleave. Each output is a new array (as in PyTorch, not a view)."""
from __future__ import annotations

import operator

from minigrad.autograd.function import Function
from minigrad.backend import array_module, to_device
from minigrad.ops.gather import index_select
from minigrad.ops.operands import normalize_dim
from minigrad.tensor_base import TensorBase


class Flip(Function):
    """out = x reversed along dims;  dx = g reversed along the same dims"""

    def forward(self, x, dims):
        self.dims = dims
        return array_module(x).flip(x, dims).copy()

    def backward(self, grad):
        return Flip.apply(grad, dims=self.dims)


class Roll(Function):
    """out = x shifted cyclically by `shifts` along dims (along the flattened x when dims
    is None);  dx = g shifted back by -shifts"""

    def forward(self, x, shifts, dims):
        self.shifts, self.dims = shifts, dims
        return array_module(x).roll(x, shifts, axis=dims)

    def backward(self, grad):
        return Roll.apply(grad, shifts=tuple(-s for s in self.shifts), dims=self.dims)


class Repeat(Function):
    """out = x tiled r_d times along each dim d (x first gets leading size-1 dims, one per
    extra repeat count);  dx = g viewed as (r_0, n_0, r_1, n_1, ...) summed over every r_d"""

    def forward(self, x, repeats):
        self.input_shape = x.shape
        self.repeats = repeats
        padded = x.reshape((1,) * (len(repeats) - x.ndim) + x.shape)
        return array_module(x).tile(padded, repeats)

    def backward(self, grad):
        sizes = (1,) * (len(self.repeats) - len(self.input_shape)) + self.input_shape
        interleaved = [n for pair in zip(self.repeats, sizes) for n in pair]
        summed = grad.reshape(interleaved).sum(tuple(range(0, len(interleaved), 2)))
        return summed.reshape(self.input_shape)


def flip(x: TensorBase, *dims) -> TensorBase:
    """x with the order of elements reversed along each of dims: flip(x, (0, 1)),
    flip(x, 0, 1) and x.flip(0, 1) alike."""
    dims = _dims(dims[0] if len(dims) == 1 else dims, x.ndim, "flip")
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"flip: dims {list(dims)} has a dim more than once")
    return Flip.apply(x, dims=dims) if dims else x


def roll(x: TensorBase, shifts, dims=None) -> TensorBase:
    """x shifted cyclically: element i of a rolled dim moves to (i + shift) % size.
    Without dims the tensor is rolled as if flattened, then given its shape back."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(operator.index(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: without dims, shifts must be one number, got {shifts}")
        return Roll.apply(x, shifts=shifts, dims=None)
    dims = _dims(dims, x.ndim, "roll")
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"roll: shifts and dims must have the same length, got {len(shifts)} shifts "
            f"and {len(dims)} dims"
        )
    return Roll.apply(x, shifts=shifts, dims=dims)


def repeat(x: TensorBase, *repeats) -> TensorBase:
    """x tiled repeats[d] times along dim d (Tensor.repeat: x.repeat(2, 3) or
    x.repeat((2, 3))); more counts than dims add leading dims."""
    repeats = _counts(repeats, "repeat")
    if len(repeats) < x.ndim:
        raise RuntimeError(
            f"repeat: got {len(repeats)} repeat counts {list(repeats)} for a tensor of "
            f"shape {tuple(x.shape)}; expected at least one per dim ({x.ndim})"
        )
    return Repeat.apply(x, repeats=repeats)


def tile(x: TensorBase, *dims) -> TensorBase:
    """x tiled dims[d] times along dim d; fewer counts than dims repeat the last dims
    (numpy.tile's rule, unlike repeat)."""
    dims = _counts(dims, "tile")
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


def repeat_interleave(x: TensorBase, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> TensorBase:
    """Each element (or slice along dim) repeated `repeats` times in place:
    [a, b] -> [a, a, b, b]. repeats is a number or a tensor with a count per element;
    without dim, x is flattened first. repeat_interleave(counts) alone gives
    [0]*counts[0] + [1]*counts[1] + ..."""
    if repeats is None:  # the one-argument form: x holds the counts
        counts = x
        return repeat_interleave(x._wrap(x.xp.arange(counts.array.size)), counts, 0)
    if dim is None:
        x, dim = x.reshape(-1), 0
    dim = normalize_dim(dim, x.ndim, "repeat_interleave")
    xp = x.xp
    size = x.shape[dim] if x.ndim else 1
    counts = _repeat_counts(repeats, size, x)
    positions = xp.repeat(xp.arange(size), counts)
    if output_size is not None and output_size != positions.size:
        raise RuntimeError(
            f"repeat_interleave: output_size={output_size} but the counts give "
            f"{positions.size} elements"
        )
    return index_select(x, dim, x._wrap(positions.astype(xp.int64, copy=False)))


def _repeat_counts(repeats, size: int, x: TensorBase):
    xp = x.xp
    if isinstance(repeats, TensorBase):
        if repeats.dtype.is_floating_point or repeats.ndim > 1:
            raise RuntimeError(
                f"repeat_interleave: repeats must be an int64 number or vector, got "
                f"{repeats.dtype} of shape {tuple(repeats.shape)}"
            )
        counts = to_device(repeats.array, x.device).reshape(-1)
        if counts.size == 1:
            counts = xp.full(size, counts[0])
    else:
        counts = xp.full(size, operator.index(repeats))
    if counts.size != size:
        raise RuntimeError(
            f"repeat_interleave: got {counts.size} repeat counts for a dim of size {size} "
            f"(input of shape {tuple(x.shape)})"
        )
    if counts.size and bool((counts < 0).any()):
        raise RuntimeError("repeat_interleave: repeats must be non-negative")
    return counts


def _dims(dims, ndim: int, op: str) -> tuple:
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return tuple(normalize_dim(operator.index(d), ndim, op) for d in dims)


def _counts(counts: tuple, op: str) -> tuple:
    """f(2, 3), f((2, 3)) and f([2, 3]) alike; every count an integer >= 0."""
    if len(counts) == 1 and isinstance(counts[0], (tuple, list)):
        counts = counts[0]
    try:
        counts = tuple(operator.index(n) for n in counts)
    except TypeError:
        raise TypeError(f"{op}: counts must be integers, got {counts}") from None
    if any(n < 0 for n in counts):
        raise RuntimeError(f"{op}: counts must be non-negative, got {list(counts)}")
    return counts
