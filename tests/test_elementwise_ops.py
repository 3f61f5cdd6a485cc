"""sin, cos, add/sub with alpha, square and the rounded divisions: gradients (float64,
central differences; see helpers.check_grad) on contiguous, transposed and strided
leaves, second derivatives, and the errors misuse raises."""
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
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, gradgrad_test, index_tensor, leaf

import minigrad as mg

pytestmark = pytest.mark.device


@pytest.mark.parametrize("name", ["sin", "cos"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_sin_cos(name, data, shape, layout):
    x = leaf(data.draw(arrays(shape, floats(-6.0, 6.0))), layout)
    check_grad(getattr(mg, name), x)
    check_grad(lambda t: getattr(t, name)(), x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts(), alpha=floats(-2.0, 2.0))
def test_add_sub_alpha_square(data, shape, layout, alpha):
    a = leaf(data.draw(arrays(shape)), layout)
    b = leaf(data.draw(arrays(shape)))
    check_grad(lambda x, y: mg.add(x, y, alpha=alpha), a, b)
    check_grad(lambda x, y: x.sub(y, alpha=alpha), a, b)
    check_grad(mg.square, a)


# name -> (function, list of (shape, elements) for its inputs)
GRADGRAD = {
    "sin": (lambda a: a.sin(), [((2, 3), floats())]),
    "cos": (lambda a: mg.cos(a), [((2, 3), floats())]),
}


test_gradgradcheck = gradgrad_test(GRADGRAD)


ERRORS = {
    # name: (callable, exception type, fragments the message must contain)
    "div_rounding_mode": (lambda: mg.div(make_tensor(np.arange(6.0)), 2, rounding_mode="round"),
                          ValueError, ["div", "'round'"]),
    "integer_division_by_zero": (lambda: index_tensor([1, 2]) // index_tensor([1, 0]),
                                 RuntimeError, ["div", "by zero"]),
}


test_error_names_the_op_and_the_problem = error_test(ERRORS)
