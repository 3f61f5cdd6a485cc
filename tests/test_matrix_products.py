"""The named matrix products mm, bmm, dot and outer: gradients (float64, central
differences; see helpers.check_grad) over drawn sizes on contiguous, transposed and
strided leaves, and the errors mismatched operands raise."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import OP_SETTINGS, arrays, check_grad, layouts, make_tensor
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, leaf

import minigrad as mg

pytestmark = pytest.mark.device


@OP_SETTINGS
@given(data=st.data(), n=st.integers(1, 3), k=st.integers(1, 3), m=st.integers(1, 3),
       batch=st.integers(1, 2), layout=layouts())
def test_mm_bmm_dot_outer(data, n, k, m, batch, layout):
    a, b = leaf(data.draw(arrays((n, k))), layout), leaf(data.draw(arrays((k, m))), layout)
    check_grad(mg.mm, a, b)
    a3 = leaf(data.draw(arrays((batch, n, k))), layout)
    b3 = leaf(data.draw(arrays((batch, k, m))), layout)
    check_grad(mg.bmm, a3, b3)
    u, v = leaf(data.draw(arrays((k,))), layout), leaf(data.draw(arrays((k,))))
    check_grad(mg.dot, u, v)
    check_grad(mg.outer, u, leaf(data.draw(arrays((m,)))))


def t(values):
    return make_tensor(np.asarray(values))


ERRORS = {
    # name: (callable, exception type, fragments the message must contain)
    "mm_dims": (lambda: mg.mm(t(np.arange(6.0).reshape(2, 3)), t([1.0, 2.0, 3.0])),
                RuntimeError, ["mm", "2-D", "(2, 3)", "(3,)"]),
    "bmm_batch": (lambda: mg.bmm(t(np.ones((2, 1, 3))), t(np.ones((3, 3, 1)))), RuntimeError,
                  ["bmm", "batch"]),
    "dot_lengths": (lambda: mg.dot(t([1.0, 2.0]), t([1.0])), RuntimeError, ["dot", "(2,)"]),
}


test_error_names_the_op_and_the_problem = error_test(ERRORS)
