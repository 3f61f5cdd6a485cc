"""Diagonals (ops/diagonals.py): diagonal (a view, any two dims, any offset), diag (a
vector's matrix, a matrix's diagonal as a copy), trace and mg.linalg.diagonal. Gradients
(float64, first and second order), writes through the view, PyTorch as the oracle, and
the errors. (Forward values against loops: test_forward_linalg.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    OP_SETTINGS,
    arrays,
    check_grad,
    floats,
    layouts,
    make_tensor,
    shapes,
    test_device,
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import check_error_case, gradgrad_test, leaf
from torch_oracle import check_against_torch, check_error_like_torch

import minigrad as mg

pytestmark = pytest.mark.device

# the CuPy stand-in hands out NumPy's read-only diagonals (CuPy's own are writable)
STAND_IN_READ_ONLY_DIAGONAL = pytest.mark.xfail(
    test_device() == "gpu" and mg.backend.device.fake_gpu_requested(),
    raises=RuntimeError, strict=True, reason="the CuPy stand-in's diagonals are read-only")


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=2), offset=st.integers(-3, 3), layout=layouts())
def test_diagonal_gradients(data, shape, offset, layout):
    dim1, dim2 = data.draw(st.permutations(range(len(shape))))[:2]
    check_grad(lambda t: t.diagonal(offset, dim1, dim2), leaf(data.draw(arrays(shape)), layout))


@OP_SETTINGS
@given(data=st.data(), n=st.integers(1, 4), offset=st.integers(-2, 2), layout=layouts())
def test_diag_of_a_vector_gradients(data, n, offset, layout):
    check_grad(lambda t: mg.diag(t, offset), leaf(data.draw(arrays((n,))), layout))


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=2, max_dims=2), layout=layouts())
def test_trace_and_diag_of_a_matrix_gradients(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(mg.trace, x)
    check_grad(lambda t: t.diag(1), x)


GRADGRAD = {
    "diagonal": lambda a: (a * a).diagonal(1, 1, 0),
    "diag_vector": lambda a: mg.diag(a[0] * a[1], -1),
    "diag_matrix": lambda a: (a * a).diag(),
    "trace": lambda a: (a * a).trace(),
}


# each case on one drawn (2, 3) matrix
test_second_derivatives = gradgrad_test({name: (func, [((2, 3), floats())])
                                          for name, func in GRADGRAD.items()})


@STAND_IN_READ_ONLY_DIAGONAL
def test_diagonal_is_a_view_to_write_through():
    x = make_tensor(np.arange(6.0).reshape(2, 3))
    x.diagonal(1).fill_(-1.0)
    mg.linalg.diagonal(x).mul_(10.0)
    assert x.tolist() == [[0.0, -1.0, 2.0], [3.0, 40.0, -1.0]]


def test_diagonal_shares_memory_and_version_and_diag_copies():
    x = make_tensor(np.arange(4.0).reshape(2, 2))
    view, copy = x.diagonal(), mg.diag(x)
    weight = make_tensor(np.ones(2), requires_grad=True)
    product = weight * view  # saves the view for weight's gradient
    x.add_(1.0)
    assert view.tolist() == [1.0, 4.0] and copy.tolist() == [0.0, 3.0]
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        product.sum().backward()


TORCH_CASES = {
    "diagonal_dims": (lambda L, x: L.lib.diagonal(x, -1, 2, 0), (3, 2, 4)),
    "diagonal_method_default": (lambda L, x: x.diagonal(), (2, 3, 4)),
    "diagonal_past_the_edge": (lambda L, x: x.diagonal(5), (2, 3)),
    "linalg_diagonal": (lambda L, x: L.lib.linalg.diagonal(x, offset=1), (2, 3, 3)),
    "diag_vector": (lambda L, x: L.lib.diag(x, 2), (3,)),
    "diag_matrix": (lambda L, x: x.diag(-1), (4, 3)),
    "trace": (lambda L, x: L.lib.trace(x), (3, 4)),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_matches_torch(name, layout):
    call, shape = TORCH_CASES[name]
    check_against_torch(call, np.random.default_rng(5).standard_normal(shape), layout=layout)


def test_integer_inputs_match_torch():
    check_against_torch(lambda L, x: (x.trace(), x.diagonal(), L.lib.diag(x[0])),
                        np.arange(6).reshape(2, 3))


LIKE_TORCH = {
    "same_dims": (lambda L, x: x.diagonal(0, 1, -1), (2, 2), ["diagonal", "both are 1"]),
    "vector_diagonal": (lambda L, x: x.diagonal(), (3,), ["diagonal", "dimension 1"]),
    "diag_of_3d": (lambda L, x: L.lib.diag(x), (2, 2, 2), ["diag", "(2, 2, 2)"]),
    "trace_of_3d": (lambda L, x: L.lib.trace(x), (2, 2, 2), ["trace", "(2, 2, 2)"]),
}


@pytest.mark.parametrize("name", list(LIKE_TORCH))
def test_errors_match_torch(name):
    call, shape, fragments = LIKE_TORCH[name]
    check_error_like_torch(call, np.zeros(shape), fragments=fragments)


def test_error_on_a_0d_input():
    check_error_case(lambda: mg.diagonal(make_tensor(np.array(1.0))), IndexError,
                     ["diagonal", "out of range"])
