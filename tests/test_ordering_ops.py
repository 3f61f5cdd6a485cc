"""Ops that order values or draw by them: sort, topk, amin and multinomial. Gradients
(float64, central differences; see helpers.check_grad) on distinct values (no ties) in
contiguous, transposed and strided leaves, second derivatives, and the errors misuse
raises."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    OP_SETTINGS,
    check_grad,
    dims_of,
    distinct_arrays,
    layouts,
    make_tensor,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, gradgrad_test, index_tensor, leaf

import minigrad as mg

pytestmark = pytest.mark.device


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts(), descending=st.booleans())
def test_sort_and_topk_values(data, shape, layout, descending):
    x = leaf(data.draw(distinct_arrays(shape)), layout)
    dim = data.draw(dims_of(len(shape)))
    check_grad(lambda t: t.sort(dim, descending=descending).values, x)
    size = shape[dim] if shape else 1
    k = data.draw(st.integers(0, size))
    check_grad(lambda t: mg.topk(t, k, dim, largest=descending).values, x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), keepdim=st.booleans(), layout=layouts())
def test_amin(data, shape, keepdim, layout):
    x = leaf(data.draw(distinct_arrays(shape)), layout)
    dim = None if not shape else data.draw(dims_of(len(shape)))
    check_grad(lambda t: mg.amin(t, dim, keepdim=keepdim), x)


# name -> (function, list of (shape, elements) for its inputs)
GRADGRAD = {
    "sort": (lambda a: a.sort(1, descending=True).values ** 3, [((2, 3), "distinct")]),
    "topk": (lambda a: mg.topk(a, 2, 0).values ** 3, [((3, 2), "distinct")]),
}


test_gradgradcheck = gradgrad_test(GRADGRAD)


def t(values, dtype=None):
    return make_tensor(np.asarray(values), dtype=dtype)


X = np.arange(6.0).reshape(2, 3)

ERRORS = {
    # name: (callable, exception type, fragments the message must contain)
    "topk_k_too_large": (lambda: mg.topk(t(X), 4), RuntimeError,
                         ["topk", "k=4", "size 3", "(2, 3)"]),
    "topk_negative_k": (lambda: t(X).topk(-1, 0), RuntimeError, ["topk", "k=-1"]),
    "sort_bad_dim": (lambda: mg.sort(t(X), 3), IndexError, ["sort", "dimension 3"]),
    "multinomial_negative": (lambda: mg.multinomial(t([0.5, -0.1]), 1), RuntimeError,
                             ["multinomial", ">= 0"]),
    "multinomial_nan": (lambda: mg.multinomial(t([0.5, np.nan]), 1), RuntimeError,
                        ["multinomial", "nan"]),
    "multinomial_zero_row": (lambda: mg.multinomial(t([[0.5, 0.5], [0.0, 0.0]]), 1),
                             RuntimeError, ["multinomial", "sums to 0"]),
    "multinomial_integers": (lambda: mg.multinomial(index_tensor([1, 2]), 1), RuntimeError,
                             ["multinomial", "floating", "int64"]),
    "multinomial_3d": (lambda: mg.multinomial(t(np.ones((2, 2, 2))), 1), RuntimeError,
                       ["multinomial", "(2, 2, 2)"]),
    "multinomial_no_samples": (lambda: mg.multinomial(t([0.5, 0.5]), 0), RuntimeError,
                               ["multinomial", "num_samples"]),
    "multinomial_too_many": (lambda: t([0.5, 0.0, 0.5]).multinomial(3), RuntimeError,
                             ["multinomial", "3 samples", "2 categories"]),
    "multinomial_generator_type": (lambda: mg.multinomial(t([1.0]), 1, generator=3),
                                   TypeError, ["generator", "int"]),
}


test_error_names_the_op_and_the_problem = error_test(ERRORS)
