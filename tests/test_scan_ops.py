"""Running sums and products along a dim: cumsum and cumprod. Gradients (float64, central
differences; see helpers.check_grad) on contiguous, transposed and strided leaves, with
exact zeros for cumprod; second derivatives; and the error a bad dim raises."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    OP_SETTINGS,
    arrays,
    check_grad,
    dims_of,
    floats,
    layouts,
    make_tensor,
    nonzero,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, gradgrad_test, index_tensor, leaf

import minigrad as mg

pytestmark = pytest.mark.device


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_cumsum_cumprod(name, data, shape, layout):
    """cumprod's inputs include exact zeros, where its O(n) formula would divide by 0."""
    elements = st.one_of(st.just(0.0), floats(-2.0, 2.0)) if name == "cumprod" else floats()
    x = leaf(data.draw(arrays(shape, elements)), layout)
    dim = data.draw(dims_of(len(shape)))
    check_grad(lambda t: getattr(mg, name)(t, dim), x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_cumprod_without_zeros(data, shape, layout):
    """Without zeros cumprod takes its O(n) rule, which divides by x; the inputs above,
    half of them zeros, seldom reach it along a dim longer than 1."""
    x = leaf(data.draw(arrays(shape, nonzero(0.5, 2.0))), layout)
    dim = data.draw(dims_of(len(shape)))
    check_grad(lambda t: t.cumprod(dim), x)


# name -> (function, list of (shape, elements) for its inputs)
GRADGRAD = {
    "cumsum": (lambda a: a.cumsum(1) ** 2, [((2, 3), floats())]),
    # the O(n) rule divides by x: its own derivative needs |x| well above underflow
    "cumprod": (lambda a: a.cumprod(1), [((2, 3), nonzero(0.1))]),
    "cumprod_zeros": (lambda a: mg.cumprod(a * index_tensor([[1, 0, 1], [0, 1, 1]]), 1),
                      [((2, 3), floats())]),
}


test_gradgradcheck = gradgrad_test(GRADGRAD)


ERRORS = {
    # name: (callable, exception type, fragments the message must contain)
    "cumsum_bad_dim": (lambda: mg.cumsum(make_tensor(np.arange(6.0).reshape(2, 3)), -3),
                       IndexError, ["cumsum", "dimension -3"]),
}


test_error_names_the_op_and_the_problem = error_test(ERRORS)
