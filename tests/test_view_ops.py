"""Views of part of a tensor or of its storage: select, narrow, unbind, view. Gradients
(float64, central differences; see helpers.check_grad) on contiguous, transposed and
strided leaves, and the errors misuse raises."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import OP_SETTINGS, arrays, check_grad, dims_of, layouts, make_tensor, shapes
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, leaf

import minigrad as mg

pytestmark = pytest.mark.device


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_select_narrow_unbind(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    dim = data.draw(dims_of(len(shape)))
    size = shape[dim]
    position = data.draw(st.integers(-size, size - 1))
    start = data.draw(st.integers(0, size))
    length = data.draw(st.integers(0, size - start))
    check_grad(lambda t: t.select(dim, position), x)
    check_grad(lambda t: mg.narrow(t, dim, start, length), x)
    check_grad(lambda t: t.unbind(dim), x)


def t(values):
    return make_tensor(np.asarray(values))


X = np.arange(6.0).reshape(2, 3)

ERRORS = {
    # name: (callable, exception type, fragments the message must contain)
    "view_needs_copy": (lambda: t(X).T.view(6), RuntimeError,
                        ["view", "(3, 2)", "reshape"]),
    "view_dtype": (lambda: t(X).view(mg.float64), TypeError, ["view", ".to(dtype)"]),
    "select_out_of_range": (lambda: t(X).select(1, 3), IndexError, ["select", "index 3"]),
    "narrow_too_long": (lambda: mg.narrow(t(X), 1, 2, 2), IndexError, ["narrow", "size 3"]),
}


test_error_names_the_op_and_the_problem = error_test(ERRORS)
