"""Reads at positions (ops/index_read.py): masked_select, take and take_along_dim.
Gradients (float64, first and second order) with repeated and negative positions and
broadcasting, PyTorch as the oracle, and the errors. (Forward values against loops over
the positions: test_forward_index_ops.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from domains import bool_masks, take_along_dim_indices
from helpers import OP_SETTINGS, arrays, check_grad, floats, layouts, make_tensor, shapes
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, gradgrad_test, index_tensor, leaf
from torch_oracle import check_against_torch, check_error_like_torch

import minigrad as mg

pytestmark = pytest.mark.device


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_masked_select_gradients(data, shape, layout):
    # the mask broadcast to the input, or the input to the mask
    small = tuple(1 if data.draw(st.booleans()) else n
                  for n in shape[data.draw(st.integers(0, len(shape))):])
    x_shape, mask_shape = data.draw(st.sampled_from([(shape, small), (small, shape)]))
    mask = make_tensor(data.draw(bool_masks(mask_shape)))
    check_grad(lambda t: mg.masked_select(t, mask), leaf(data.draw(arrays(x_shape)), layout))


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_take_gradients_collect_repeated_positions(data, shape, layout):
    x = data.draw(arrays(shape))
    index = index_tensor(data.draw(st.lists(st.integers(-x.size, x.size - 1), min_size=1,
                                            max_size=6)))
    check_grad(lambda t: mg.take(t, index), leaf(x, layout))


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_take_along_dim_gradients(data, shape, layout):
    dim = data.draw(st.integers(0, len(shape) - 1))
    index = index_tensor(data.draw(take_along_dim_indices(shape, dim)))
    check_grad(lambda t: mg.take_along_dim(t, index, dim), leaf(data.draw(arrays(shape)),
                                                                 layout))


GRADGRAD = {
    "masked_select": lambda a: mg.masked_select(a * a, make_tensor(np.array([True, False,
                                                                             True]))),
    "take": lambda a: mg.take(a * a, index_tensor([[5, -1], [0, 0]])),
    "take_along_dim": lambda a: mg.take_along_dim(a * a, index_tensor([[2, 0, 0]]), 1),
    "take_along_dim_flat": lambda a: mg.take_along_dim(a * a, index_tensor([1, 1, 4])),
}


# each case on one drawn (2, 3) matrix
test_second_derivatives = gradgrad_test({name: (func, [((2, 3), floats())])
                                          for name, func in GRADGRAD.items()})


TORCH_CASES = {
    "masked_select_broadcast_input": (lambda L, x: L.lib.masked_select(
        x, L.index([[True, False, True], [False, False, True]])), (3,)),
    "masked_select_broadcast_mask": (lambda L, x: x.masked_select(L.index([[True], [False]])),
                                     (2, 2, 3)),
    "take_repeats_and_negatives": (lambda L, x: L.lib.take(x, L.index([[5, -1], [0, 0]])),
                                   (2, 3)),
    "take_along_dim": (lambda L, x: L.lib.take_along_dim(x, L.index([[2, -3], [1, 1]]), 1),
                       (2, 3)),
    "take_along_dim_broadcast": (lambda L, x: x.take_along_dim(L.index([[[0], [1], [0]]]), 0),
                                 (2, 3, 4)),
    "take_along_dim_flat": (lambda L, x: L.lib.take_along_dim(x, L.index([5, 0, 5])), (2, 3)),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
@pytest.mark.parametrize("layout", ["contiguous", "sliced"])
def test_matches_torch(name, layout):
    call, shape = TORCH_CASES[name]
    check_against_torch(call, np.random.default_rng(3).standard_normal(shape), layout=layout)


LIKE_TORCH = {
    "masked_select_int_mask": (lambda L, x: L.lib.masked_select(x, L.index([1, 0])),
                               ["masked_select", "bool mask", "int64"]),
    "take_out_of_range": (lambda L, x: L.lib.take(x, L.index([4])),
                          ["take", "index 4", "4 elements"]),
    "take_along_dim_ranks": (lambda L, x: L.lib.take_along_dim(x, L.index([0]), 1),
                             ["take_along_dim", "(2, 2)", "(1,)"]),
}


@pytest.mark.parametrize("name", list(LIKE_TORCH))
def test_errors_match_torch(name):
    call, fragments = LIKE_TORCH[name]
    check_error_like_torch(call, np.zeros((2, 2)), fragments=fragments)


ERRORS = {
    "masked_select_shapes": (lambda: mg.masked_select(make_tensor(np.zeros((2, 3))),
                                                      make_tensor(np.ones(2, bool))),
                             RuntimeError, ["masked_select", "(2,)", "(2, 3)"]),
    "take_float_index": (lambda: mg.take(make_tensor(np.zeros(3)), make_tensor(np.zeros(1))),
                         RuntimeError, ["take", "int64 index", "float64"]),
    "take_along_dim_range": (lambda: mg.take_along_dim(make_tensor(np.zeros((2, 3))),
                                                       index_tensor([[3]]), 1),
                             IndexError, ["take_along_dim", "index 3", "dim 1 of size 3"]),
}


test_errors_name_the_op_and_the_problem = error_test(ERRORS)
