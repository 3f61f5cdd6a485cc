"""Forward values of the selection and ordering ops (gather, scatter and scatter_add, in
place and not, index_select, sort/argsort/topk) against loops over the index written from
each op's definition, and multinomial's draws against its probabilities. No PyTorch
needed (see numpy_oracle)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import OP_SETTINGS, layouts
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_oracle import assert_forward, assert_op, generic_arrays, generic_shapes, ids, tensor

import minigrad as mg
import minigrad.ops as ops

pytestmark = pytest.mark.device


@st.composite
def index_along(draw, shape, distinct: bool = False):
    """(dim, index) with index.shape[d] <= shape[d] off dim and values in [0, shape[dim]);
    with distinct, no position along dim is named twice in a line."""
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    axis = dim % len(shape)
    n = shape[axis]
    length = draw(st.integers(1, n if distinct else n + 2))
    index_shape = tuple(length if d == axis else draw(st.integers(1, side))
                        for d, side in enumerate(shape))
    if not distinct:
        return dim, draw(hnp.arrays(np.int64, index_shape, elements=st.integers(0, n - 1)))
    lines = int(np.prod(index_shape)) // length
    rows = [draw(st.permutations(range(n)))[:length] for _ in range(lines)]
    moved = np.array(rows, dtype=np.int64).reshape(
        tuple(s for d, s in enumerate(index_shape) if d != axis) + (length,))
    return dim, np.moveaxis(moved, -1, axis)


def along(position, axis, value):
    return position[:axis] + (int(value),) + position[axis + 1:]


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_gather(data, shape, layout):
    """out[p] = x[p with p[dim] replaced by index[p]]."""
    x = data.draw(generic_arrays(shape))
    dim, index = data.draw(index_along(shape))
    axis = dim % len(shape)
    expected = np.empty(index.shape)
    for p in np.ndindex(*index.shape):
        expected[p] = x[along(p, axis, index[p])]
    assert_op("gather", (tensor(x, layout), dim, ids(index)), expected)


def scattered(x, axis, index, src, accumulate: bool):
    out = x.copy()
    for p in np.ndindex(*index.shape):
        target = along(p, axis, index[p])
        value = src[p] if np.ndim(src) else src
        out[target] = out[target] + value if accumulate else value
    return out


@pytest.mark.parametrize("name", ["scatter", "scatter_"])
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts(), use_value=st.booleans())
def test_scatter(name, data, shape, layout, use_value):
    """out = x with out[p with p[dim] replaced by index[p]] = src[p] (distinct targets)."""
    x = data.draw(generic_arrays(shape))
    dim, index = data.draw(index_along(shape, distinct=True))
    axis = dim % len(shape)
    src = 2.5 if use_value else data.draw(generic_arrays(tuple(n + 1 for n in index.shape)))
    expected = scattered(x, axis, index, src, accumulate=False)
    target = tensor(x, layout)
    out = getattr(ops, name)(target, dim, ids(index), src if use_value else tensor(src))
    assert_forward(out, expected)
    assert (out is target) == name.endswith("_")
    if not use_value:
        added = scattered(x, axis, index, src, accumulate=True)
        assert_forward(ops.scatter(tensor(x, layout), dim, ids(index), tensor(src),
                                   reduce="add"), added)


@pytest.mark.parametrize("name", ["scatter_add", "scatter_add_"])
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_scatter_add_accumulates_repeated_positions(name, data, shape, layout):
    x = data.draw(generic_arrays(shape))
    dim, index = data.draw(index_along(shape))
    src = data.draw(generic_arrays(index.shape))
    expected = scattered(x, dim % len(shape), index, src, accumulate=True)
    target = tensor(x, layout)
    out = getattr(ops, name)(target, dim, ids(index), tensor(src))
    assert_forward(out, expected)
    assert (out is target) == name.endswith("_")


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_index_select(data, shape, layout):
    x = data.draw(generic_arrays(shape))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    axis = dim % len(shape)
    picks = data.draw(st.lists(st.integers(0, shape[axis] - 1), min_size=1, max_size=5))
    out_shape = shape[:axis] + (len(picks),) + shape[axis + 1:]
    expected = np.empty(out_shape)
    for p in np.ndindex(*out_shape):
        expected[p] = x[along(p, axis, picks[p[axis]])]
    assert_op("index_select", (tensor(x, layout), dim, ids(picks)), expected)


def ranked(x, axis, descending):
    """Per line along axis: the positions of x's values in sorted order, ties in their
    original order (a stable sort by insertion)."""
    order = np.empty(x.shape, dtype=np.int64)
    moved_x, moved_order = np.moveaxis(x, axis, -1), np.moveaxis(order, axis, -1)
    for line in np.ndindex(*moved_x.shape[:-1]):
        values = list(moved_x[line])
        positions: list[int] = []
        for j, v in enumerate(values):
            before = [i for i, k in enumerate(positions)
                      if (values[k] > v if descending else values[k] < v) or values[k] == v]
            positions.insert(len(before), j)
        moved_order[line] = positions
    return order


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts(), descending=st.booleans())
def test_sort_argsort_stable_with_ties(data, shape, layout, descending):
    x = data.draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([-1.0, 0.5, 2.0, 3.0])))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    order = ranked(x, dim % len(shape), descending)
    values = np.take_along_axis(x, order, axis=dim)
    result = ops.sort(tensor(x, layout), dim, descending=descending, stable=True)
    assert_forward(result.values, values)
    assert_forward(result.indices, order)
    assert_op("argsort", (tensor(x, layout),), order, dim=dim, descending=descending,
              stable=True)


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts(), largest=st.booleans())
def test_topk(data, shape, layout, largest):
    x = data.draw(generic_arrays(shape))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(1, shape[dim]))
    order = ranked(x, dim % len(shape), descending=largest)
    indices = np.take(order, range(k), axis=dim)
    result = ops.topk(tensor(x, layout), k, dim, largest=largest)
    assert_forward(result.values, np.take_along_axis(x, indices, axis=dim))
    assert_forward(result.indices, indices)
    method = tensor(x, layout).topk(k, dim, largest=largest)
    assert_forward(method.values, np.take_along_axis(x, indices, axis=dim))


@OP_SETTINGS
@given(weights=hnp.arrays(np.float64, (2, 4), elements=st.sampled_from([0.0, 1.0, 2.0, 5.0]))
       .filter(lambda w: bool(np.all(w.sum(axis=1) > 0))), seed=st.integers(0, 2**16))
def test_multinomial_frequencies_follow_the_weights(weights, seed):
    """With replacement, each category's count over n draws is Binomial(n, p): within 5
    standard deviations; a category of weight 0 is never drawn."""
    n = 4000
    generator = mg.Generator().manual_seed(seed)
    draws = ops.multinomial(tensor(weights), n, replacement=True, generator=generator)
    assert draws.dtype is mg.int64 and tuple(draws.shape) == (2, n)
    samples = draws.numpy()
    probabilities = weights / weights.sum(axis=1, keepdims=True)
    for row, p in zip(samples, probabilities):
        counts = np.array([(row == c).sum() for c in range(p.size)])
        spread = np.sqrt(n * p * (1 - p))
        assert np.all(np.abs(counts - n * p) <= 5 * spread), (counts, n * p)
        assert np.all(counts[p == 0] == 0)


@OP_SETTINGS
@given(seed=st.integers(0, 2**16))
def test_multinomial_without_replacement(seed):
    """Distinct categories per row, and the first draw follows the weights: category 0 of
    weight 3/6 comes first in about half of many rows (5 standard deviations)."""
    rows = 3000
    weights = np.tile([3.0, 2.0, 1.0, 0.0], (rows, 1))
    generator = mg.Generator().manual_seed(seed)
    samples = tensor(weights).multinomial(3, generator=generator).numpy()
    assert all(len(set(row)) == 3 and 3 not in row for row in samples)
    first_is_zero = (samples[:, 0] == 0).mean()
    assert abs(first_is_zero - 0.5) <= 5 * math.sqrt(0.25 / rows)
