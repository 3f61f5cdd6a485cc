"""Forward values of the index writes and reads (ops/index_write.py, ops/index_read.py):
index_add, index_copy, index_fill and masked_scatter with their in-place forms, and
masked_select, take and take_along_dim, against loops over the slices and positions
written from each op's definition, with repeated and negative positions and broadcasting.
No PyTorch needed (see numpy_oracle)."""
from __future__ import annotations

import numpy as np
import pytest
from domains import bool_masks, slice_writes, take_along_dim_indices
from helpers import OP_SETTINGS, arrays, layouts, shapes
from hypothesis import given
from hypothesis import strategies as st
from numpy_oracle import assert_forward, assert_op, ids, tensor

import minigrad.ops as ops

pytestmark = pytest.mark.device


def _slice(dim: int, position) -> tuple:
    return (slice(None),) * dim + (position,)


@OP_SETTINGS
@given(write=slice_writes(), alpha=st.sampled_from([1, -0.5]), layout=layouts())
def test_index_add(write, alpha, layout):
    x, dim, index, source = write
    expected = x.copy()
    for i, row in enumerate(index):
        expected[_slice(dim, row)] += alpha * source[_slice(dim, i)]
    assert_op("index_add", (tensor(x, layout), dim, ids(index), tensor(source, layout)),
              expected, alpha=alpha)


@OP_SETTINGS
@given(write=slice_writes(distinct=True), layout=layouts())
def test_index_copy(write, layout):
    x, dim, index, source = write
    expected = x.copy()
    for i, row in enumerate(index):
        expected[_slice(dim, row)] = source[_slice(dim, i)]
    assert_op("index_copy", (tensor(x, layout), dim, ids(index), tensor(source)), expected)


@OP_SETTINGS
@given(write=slice_writes(), from_end=st.booleans(), layout=layouts())
def test_index_fill(write, from_end, layout):
    x, dim, index, _ = write
    expected = x.copy()
    for row in index:
        expected[_slice(dim, row)] = -7.5
    index = index - x.shape[dim] if from_end else index  # negative: counted from the end
    assert_op("index_fill", (tensor(x, layout), dim, ids(index), -7.5), expected)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_masked_scatter(data, shape, layout):
    mask, x = data.draw(bool_masks(shape)), data.draw(arrays(shape))
    source = data.draw(arrays((int(mask.sum()) + 2,)))
    expected, taken = x.copy(), iter(source)
    for position in np.ndindex(*shape):  # row-major order
        if mask[position]:
            expected[position] = next(taken)
    assert_op("masked_scatter", (tensor(x, layout), tensor(mask), tensor(source)), expected)


def test_in_place_forms_write_the_result_into_the_tensor():
    x = np.arange(6.0).reshape(2, 3)
    cases = {
        "index_add_": ((1, ids([2, 2]), tensor(np.ones((2, 2)))), [[0, 1, 4], [3, 4, 7]]),
        "index_copy_": ((0, ids([1]), tensor(np.zeros((1, 3)))), [[0, 1, 2], [0, 0, 0]]),
        "index_fill_": ((1, ids([-1]), 9.0), [[0, 1, 9], [3, 4, 9]]),
        "masked_scatter_": ((tensor(np.array([True, False, True])), tensor(-np.ones(4))),
                            [[-1, 1, -1], [-1, 4, -1]]),
    }
    for name, (args, expected) in cases.items():
        target = tensor(x)
        assert getattr(ops, name)(target, *args) is target
        assert_forward(target, np.array(expected, dtype=np.float64))


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_masked_select(data, shape, layout):
    # either operand may be the one broadcast
    small = tuple(1 if data.draw(st.booleans()) else n
                  for n in shape[data.draw(st.integers(0, len(shape))):])
    x_shape, mask_shape = data.draw(st.sampled_from([(shape, small), (small, shape)]))
    x, mask = data.draw(arrays(x_shape)), data.draw(bool_masks(mask_shape))
    full, full_mask = np.broadcast_to(x, shape), np.broadcast_to(mask, shape)
    expected = np.array([full[p] for p in np.ndindex(*shape) if full_mask[p]], np.float64)
    assert_op("masked_select", (tensor(x, layout), tensor(mask)), expected)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_take(data, shape, layout):
    x = data.draw(arrays(shape))
    index = np.array(data.draw(st.lists(st.lists(st.integers(-x.size, x.size - 1),
                                                 min_size=2, max_size=2), max_size=3)),
                     dtype=np.int64).reshape(-1, 2)
    flat = x.reshape(-1)
    expected = np.array([[flat[i] for i in row] for row in index],  # negative: from the end
                        np.float64).reshape(index.shape)
    assert_op("take", (tensor(x, layout), ids(index)), expected)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_take_along_dim(data, shape, layout):
    dim = data.draw(st.integers(0, len(shape) - 1))
    size = shape[dim]
    index = data.draw(take_along_dim_indices(shape, dim))
    index_shape = index.shape
    x = data.draw(arrays(shape))
    out_shape = tuple(index_shape[d] if d == dim else n for d, n in enumerate(shape))
    expected = np.empty(out_shape)
    for p in np.ndindex(*out_shape):
        i = index[tuple(0 if index_shape[d] == 1 else k for d, k in enumerate(p))]
        expected[p] = x[p[:dim] + (i % size,) + p[dim + 1:]]
    assert_op("take_along_dim", (tensor(x, layout), ids(index), dim - len(shape)), expected)
    # without a dim, both are read as vectors
    assert_op("take_along_dim", (tensor(x, layout), ids(index)),
              np.array([x.reshape(-1)[i] for i in index.reshape(-1)], np.float64))
