"""Writes at positions along a dim or under a mask (ops/index_write.py): index_add,
index_copy, index_fill, masked_scatter and their in-place forms. Gradients (float64, first
and second order) of every input including a 0-d fill value, PyTorch as the oracle, the
GPU's run-to-run determinism, writes through views, and the errors. (Forward values
against loops over the slices: test_forward_index_ops.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from domains import slice_writes
from helpers import (
    OP_SETTINGS,
    arrays,
    check_grad,
    floats,
    layouts,
    make_tensor,
    test_device,
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, gradgrad_test, index_tensor, leaf
from torch_oracle import check_against_torch

import minigrad as mg

pytestmark = pytest.mark.device


# ----------------------------------------------------------------------------- gradients


@OP_SETTINGS
@given(write=slice_writes(), layout=layouts())
def test_index_add_gradients(write, layout):
    x, dim, index, source = write
    check_grad(lambda a, s: mg.index_add(a, dim, index_tensor(index), s, alpha=1.5),
               leaf(x, layout), leaf(source, layout))


@OP_SETTINGS
@given(write=slice_writes(distinct=True), layout=layouts())
def test_index_copy_gradients(write, layout):
    # distinct positions: a repeated one keeps one of its sources, and the finite
    # differences of the others are 0 where PyTorch's rule gives them the gradient
    x, dim, index, source = write
    check_grad(lambda a, s: mg.index_copy(a, dim, index_tensor(index), s),
               leaf(x, layout), leaf(source, layout))


@OP_SETTINGS
@given(write=slice_writes(), layout=layouts(), value=st.floats(-2, 2), data=st.data())
def test_index_fill_gradients_reach_a_tensor_value_once_per_element(write, layout, value,
                                                                     data):
    x, dim, index, _ = write
    # a slice may be named twice, also once from each end (i and i - size)
    from_end = np.array(data.draw(st.lists(st.booleans(), min_size=len(index),
                                           max_size=len(index))), dtype=bool)
    index = np.where(from_end, index - x.shape[dim], index)
    check_grad(lambda a, v: mg.index_fill(a, dim, index_tensor(index), v),
               leaf(x, layout), leaf(np.array(value)))


@OP_SETTINGS
@given(data=st.data(), layout=layouts())
def test_masked_scatter_gradients_with_a_broadcast_mask(data, layout):
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=3, max_size=3)))
    x = leaf(data.draw(arrays((2, 3))), layout)
    source = leaf(data.draw(arrays((2, 4))), layout)  # 8 elements, at most 6 read
    check_grad(lambda a, s: mg.masked_scatter(a, make_tensor(mask), s), x, source)


GRADGRAD = {
    "index_add": lambda a, s: mg.index_add(a, 1, index_tensor([2, 0, 2]), s * s, alpha=2),
    "index_copy": lambda a, s: mg.index_copy(a, 1, index_tensor([2, 0, 1]), s * s),
    "index_fill": lambda a, s: mg.index_fill(a * a, 1, index_tensor([0, 0]), s[0, 0] * s[1, 1]),
    "masked_scatter": lambda a, s: mg.masked_scatter(
        a * a, make_tensor(np.array([[True, False, True]])), s.reshape(-1) * s.sum()),
}


# each case on two drawn (2, 3) matrices
test_second_derivatives = gradgrad_test({name: (func, [((2, 3), floats())] * 2)
                                          for name, func in GRADGRAD.items()})


# ----------------------------------------------------------------------------- PyTorch

TORCH_CASES = {
    "index_add_repeats": (lambda L, x, s: L.lib.index_add(x, 1, L.index([2, 0, 2]), s,
                                                          alpha=-2.0), [(2, 3), (2, 3)]),
    "index_add_negative_dim": (lambda L, x, s: x.index_add(-2, L.index([1]), s),
                               [(2, 3, 2), (2, 1, 2)]),
    "index_copy": (lambda L, x, s: L.lib.index_copy(x, 0, L.index([1, 0]), s),
                   [(3, 2), (2, 2)]),
    # the sources of the repeated slice are equal, so which one lands does not matter
    "index_copy_repeats": (lambda L, x, s: x.index_copy(1, L.index([0, 0]),
                                                        s.sum(1, keepdim=True).expand(2, 2)),
                           [(2, 3), (2, 1)]),
    # (PyTorch's backward fails on negative indices here: the number case has them)
    "index_fill_tensor_value": (lambda L, x, v: L.lib.index_fill(x, 1, L.index([2, 0, 2]), v),
                                [(2, 3), ()]),
    "index_fill_number": (lambda L, x: x.index_fill(0, L.index([-1, 0]), -1.0), [(3, 2)]),
    "masked_scatter_broadcast": (lambda L, x, s: L.lib.masked_scatter(
        x, L.index([[True], [False], [True]]), s), [(2,), (5,)]),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_matches_torch(name, layout):
    call, shapes_ = TORCH_CASES[name]
    rng = np.random.default_rng(7)
    check_against_torch(call, *[rng.standard_normal(s) for s in shapes_], layout=layout)


def test_index_add_repeats_its_bits_from_run_to_run():
    # float32 sums into one position of values of very different magnitudes: an order
    # that changed between runs (the GPU's atomics) would change the last bits
    values = np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32)
    values *= 10.0 ** np.arange(-4, 4)[np.arange(64) % 8, None]
    index = index_tensor(np.arange(64) % 2)
    runs = [mg.index_add(make_tensor(np.zeros((2, 3), np.float32)), 0, index,
                         make_tensor(values)).numpy() for _ in range(3)]
    assert all(np.array_equal(run, runs[0]) for run in runs)


@pytest.mark.skipif(test_device() != "gpu", reason="the CPU writes repeats in index order")
def test_index_copy_with_repeats_is_refused_in_deterministic_mode():
    x, index = make_tensor(np.zeros((3, 2))), index_tensor([1, 1])
    mg.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match="index_copy on the GPU"):
            mg.index_copy(x, 0, index, make_tensor(np.ones((2, 2))))
        mg.index_copy(x, 0, index_tensor([1, 0]), make_tensor(np.ones((2, 2))))
    finally:
        mg.use_deterministic_algorithms(False)


def test_in_place_forms_write_into_the_tensor_and_its_base():
    base = make_tensor(np.zeros((2, 3, 2)))
    view = base[1]
    assert view.index_add_(0, index_tensor([2, 2]), make_tensor(np.ones((2, 2)))) is view
    view.index_fill_(1, index_tensor([0]), 5.0)
    view.masked_scatter_(make_tensor(np.array([False, True])), make_tensor(np.arange(3.0)))
    expected = np.zeros((2, 3, 2))
    expected[1, 2] = 2.0
    expected[1, :, 0] = 5.0
    expected[1, :, 1] = [0.0, 1.0, 2.0]
    np.testing.assert_array_equal(base.numpy(), expected)
    weight = make_tensor(np.zeros(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="index_copy_: a leaf tensor that requires grad"):
        weight.index_copy_(0, index_tensor([0]), make_tensor(np.ones(1)))


def _x():
    return make_tensor(np.zeros((3, 2)))


ERRORS = {
    "float_index": (lambda: mg.index_add(_x(), 0, make_tensor(np.array([0.0])),
                                         make_tensor(np.ones((1, 2)))),
                    RuntimeError, ["index_add", "int64 index", "float64"]),
    "matrix_index": (lambda: mg.index_copy(_x(), 0, index_tensor([[0]]),
                                           make_tensor(np.ones((1, 2)))),
                     IndexError, ["index_copy", "vector", "(1, 1)"]),
    "index_out_of_range": (lambda: mg.index_add(_x(), 1, index_tensor([2]),
                                                make_tensor(np.ones((3, 1)))),
                           IndexError, ["index_add", "index 2", "dim 1 with size 2"]),
    "negative_add_index": (lambda: mg.index_add(_x(), 0, index_tensor([-1]),
                                                make_tensor(np.ones((1, 2)))),
                           IndexError, ["index_add", "index -1"]),
    "fill_index_below_minus_size": (lambda: mg.index_fill(_x(), 0, index_tensor([-4]), 1.0),
                                    IndexError, ["index_fill", "index -4"]),
    "source_shape": (lambda: mg.index_add(_x(), 0, index_tensor([0, 1]),
                                          make_tensor(np.ones((1, 2)))),
                     RuntimeError, ["index_add", "(1, 2)", "expected (2, 2)"]),
    "source_dtype": (lambda: mg.index_copy(_x(), 0, index_tensor([0]),
                                           make_tensor(np.ones((1, 2), np.float32))),
                     RuntimeError, ["index_copy", "float64", "float32"]),
    "fill_value_vector": (lambda: mg.index_fill(_x(), 0, index_tensor([0]),
                                                make_tensor(np.ones(1))),
                          RuntimeError, ["index_fill", "0-d", "(1,)"]),
    "scatter_mask_dtype": (lambda: mg.masked_scatter(_x(), index_tensor([1, 0]), _x()),
                           RuntimeError, ["masked_scatter", "bool mask", "int64"]),
    "scatter_source_short": (lambda: mg.masked_scatter(
        _x(), make_tensor(np.array([True, True])), make_tensor(np.ones(5))),
                             RuntimeError, ["masked_scatter", "selects 6", "only 5"]),
    "scatter_mask_shape": (lambda: mg.masked_scatter(
        _x(), make_tensor(np.array([True, True, False])), _x()),
                           RuntimeError, ["masked_scatter", "(3,)", "(3, 2)"]),
}


test_errors_name_the_op_and_the_problem = error_test(ERRORS)
