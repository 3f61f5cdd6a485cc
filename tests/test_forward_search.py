"""Forward values of the search ops (ops/search.py): nonzero/argwhere, bucketize,
searchsorted (1-D, by rows, with a sorter) and unique (flat and along a dim), against
brute-force Python over drawn inputs full of ties and zeros, where the left/right rules
and the counts differ. No PyTorch needed (see numpy_oracle)."""
from __future__ import annotations

import numpy as np
import pytest
from domains import STAND_IN_UNIQUE_AXIS
from helpers import OP_SETTINGS, shapes
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_oracle import tensor

import minigrad as mg
import minigrad.ops as ops

pytestmark = pytest.mark.device

# few distinct values: zeros, repeats and ties everywhere
FEW_VALUES = st.sampled_from([-1.5, 0.0, 0.0, 0.5, 2.0])


def few_values(shape):
    return hnp.arrays(np.float64, shape, elements=FEW_VALUES)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), as_bool=st.booleans())
def test_nonzero_and_argwhere_list_the_nonzero_positions(data, shape, as_bool):
    x = data.draw(few_values(shape))
    x = x != 0 if as_bool else x
    expected = np.array([p for p in np.ndindex(*shape) if x[p]], dtype=np.int64)
    expected = expected.reshape(len(expected), len(shape))
    for out in (ops.nonzero(tensor(x)), ops.argwhere(tensor(x))):
        assert out.dtype is mg.int64 and out.shape == expected.shape
        np.testing.assert_array_equal(out.numpy(), expected)
    columns = ops.nonzero(tensor(x), as_tuple=True)
    # a 0-d input counts as a vector of one element there
    expected_columns = list(expected.T) if shape else [np.zeros(len(expected), np.int64)]
    assert len(columns) == len(expected_columns)
    for column, expected_column in zip(columns, expected_columns):
        assert column.dtype is mg.int64
        np.testing.assert_array_equal(column.numpy(), expected_column)


def _brute_force_search(rows, values, right: bool):
    """For each value, how many elements of its row (of the one row of 1-D `rows`) lie
    below it (with right, not above it)."""
    found = np.zeros(values.shape, dtype=np.int64)
    for position in np.ndindex(*values.shape):
        row, value = rows if rows.ndim == 1 else rows[position[:-1]], values[position]
        found[position] = np.sum(row <= value) if right else np.sum(row < value)
    return found


@OP_SETTINGS
@given(data=st.data(), value_shape=shapes(), right=st.booleans(), length=st.integers(0, 5))
def test_bucketize_and_1d_searchsorted_count_the_smaller_boundaries(data, value_shape, right,
                                                                     length):
    boundaries = np.sort(data.draw(few_values((length,))))
    values = data.draw(few_values(value_shape))
    expected = _brute_force_search(boundaries, values, right)
    side = "right" if right else "left"
    for out in (ops.bucketize(tensor(values), tensor(boundaries), right=right),
                ops.searchsorted(tensor(boundaries), tensor(values), side=side)):
        assert out.dtype is mg.int64
        np.testing.assert_array_equal(out.numpy(), expected)


@OP_SETTINGS
@given(data=st.data(), batch=shapes(min_dims=1, max_dims=2), right=st.booleans(),
       length=st.integers(1, 5), count=st.integers(1, 4), use_sorter=st.booleans())
def test_searchsorted_searches_each_row(data, batch, right, length, count, use_sorter):
    rows = data.draw(few_values(batch + (length,)))
    values = data.draw(few_values(batch + (count,)))
    sorted_rows = np.sort(rows, axis=-1)
    expected = _brute_force_search(sorted_rows, values, right)
    if use_sorter:  # the unsorted rows and the permutation that sorts them
        sequence = tensor(rows)
        sorter = tensor(np.argsort(rows, axis=-1, kind="stable"))
    else:
        sequence, sorter = tensor(sorted_rows), None
    out = ops.searchsorted(sequence, tensor(values), right=right, sorter=sorter)
    np.testing.assert_array_equal(out.numpy(), expected)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1))
def test_unique_lists_each_value_once_with_inverse_and_counts(data, shape):
    x = data.draw(few_values(shape))
    values, inverse, counts = ops.unique(tensor(x), return_inverse=True,
                                        return_counts=True)
    distinct = sorted(set(x.reshape(-1).tolist()))
    assert values.tolist() == distinct
    assert inverse.shape == x.shape and inverse.dtype is mg.int64
    assert [distinct[i] for i in inverse.numpy().reshape(-1)] == x.reshape(-1).tolist()
    assert counts.tolist() == [x.reshape(-1).tolist().count(v) for v in distinct]


@STAND_IN_UNIQUE_AXIS
@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=2), dim=st.integers(-2, 1))
def test_unique_along_a_dim_lists_each_slice_once(data, shape, dim):
    x = data.draw(few_values(shape))
    values, inverse, counts = ops.unique(tensor(x), dim=dim, return_inverse=True,
                                        return_counts=True)
    slices = [tuple(np.take(x, i, axis=dim).reshape(-1).tolist())
              for i in range(x.shape[dim])]
    distinct = sorted(set(slices))
    assert values.shape[dim] == len(distinct)
    assert [tuple(np.take(values.numpy(), i, axis=dim).reshape(-1).tolist())
            for i in range(len(distinct))] == distinct
    assert [distinct[i] for i in inverse.tolist()] == slices
    assert counts.tolist() == [slices.count(s) for s in distinct]
