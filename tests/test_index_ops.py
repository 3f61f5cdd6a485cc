"""Ops that pick or place values by an integer index tensor: gather, scatter, scatter_add,
index_select (and one_hot's checks of its ids). Gradients (float64, central differences;
see helpers.check_grad) on contiguous, transposed and strided leaves, second derivatives,
and the errors misuse raises. Index tensors are drawn at random within range; where a
position written twice would make the gradient ambiguous (scatter) they are drawn
distinct."""
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
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, gradgrad_test, index_tensor, leaf

import minigrad as mg
import minigrad.nn.functional as F

pytestmark = pytest.mark.device


@st.composite
def gather_args(draw, min_dims=1):
    """(x shape, dim, index array) for gather: index no larger than x apart from dim."""
    shape = draw(shapes(min_dims=min_dims))
    dim = draw(dims_of(len(shape)))
    index_shape = tuple(
        draw(st.integers(1, 4)) if d == dim % len(shape) else draw(st.integers(1, n))
        for d, n in enumerate(shape)
    )
    values = draw(st.lists(st.integers(0, shape[dim] - 1), min_size=int(np.prod(index_shape)),
                           max_size=int(np.prod(index_shape))))
    return shape, dim, np.array(values, dtype=np.int64).reshape(index_shape)


@st.composite
def distinct_positions(draw, min_dims=1):
    """(x shape, dim, index) for scatter: along dim, no position is named twice."""
    shape = draw(shapes(min_dims=min_dims))
    dim = draw(dims_of(len(shape))) % len(shape)
    count = draw(st.integers(1, shape[dim]))
    index_shape = tuple(count if d == dim else draw(st.integers(1, n))
                        for d, n in enumerate(shape))
    keys = draw(arrays(tuple(shape[dim] if d == dim else n for d, n in enumerate(index_shape))))
    order = np.argsort(keys, axis=dim, kind="stable")  # a permutation along dim per line
    return shape, dim, np.take(order, np.arange(count), axis=dim)


# ----------------------------------------------------------------------------- gradients


@OP_SETTINGS
@given(data=st.data(), args=gather_args(), layout=layouts())
def test_gather(data, args, layout):
    shape, dim, index = args
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(lambda t: mg.gather(t, dim, index_tensor(index)), x)


@OP_SETTINGS
@given(data=st.data(), args=distinct_positions(), layout=layouts(), use_value=st.booleans())
def test_scatter(data, args, layout, use_value):
    shape, dim, index = args
    x = leaf(data.draw(arrays(shape)), layout)
    if use_value:
        check_grad(lambda t: t.scatter(dim, index_tensor(index), 2.5), x)
        return
    src = leaf(data.draw(arrays(tuple(n + 1 for n in index.shape))))  # larger than index
    check_grad(lambda t, s: mg.scatter(t, dim, index_tensor(index), s), x, src)


@OP_SETTINGS
@given(data=st.data(), args=gather_args(), layout=layouts())
def test_scatter_add_repeated_positions(data, args, layout):
    shape, dim, index = args
    x = leaf(data.draw(arrays(shape)), layout)
    src = leaf(data.draw(arrays(index.shape)))
    check_grad(lambda t, s: mg.scatter_add(t, dim, index_tensor(index), s), x, src)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_index_select(data, shape, layout):
    dim = data.draw(dims_of(len(shape)))
    picks = data.draw(st.lists(st.integers(0, shape[dim] - 1), min_size=0, max_size=5))
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(lambda t: t.index_select(dim, index_tensor(picks)), x)


# ----------------------------------------------------------------------------- second derivatives

# name -> (function, list of (shape, elements) for its inputs); linear ops are composed
# with a square, so that their second derivative is not zero
GRADGRAD = {
    "gather": (lambda a: mg.gather(a, 1, index_tensor([[2, 2], [0, 1]])) ** 2,
               [((2, 3), floats())]),
    "scatter": (lambda a, s: a.scatter(0, index_tensor([[1, 0, 1]]), s * s) ** 2,
                [((2, 3), floats()), ((1, 3), floats())]),
    "scatter_add": (lambda a, s: mg.scatter_add(a, 1, index_tensor([[0, 0], [2, 1]]), s) ** 2,
                    [((2, 3), floats()), ((2, 2), floats())]),
    "index_select": (lambda a: a.index_select(0, index_tensor([1, 1, 0])) ** 2,
                     [((2, 3), floats())]),
}


test_gradgradcheck = gradgrad_test(GRADGRAD)


# ----------------------------------------------------------------------------- errors


def t(values, dtype=None):
    return make_tensor(np.asarray(values), dtype=dtype)


X = np.arange(6.0).reshape(2, 3)

ERRORS = {
    # name: (callable, exception type, fragments the message must contain)
    "gather_float_index": (lambda: mg.gather(t(X), 1, t([[0.0]])), RuntimeError,
                           ["gather", "int64", "float"]),
    "gather_bool_index": (lambda: mg.gather(t(X), 1, t([[True]])), RuntimeError,
                          ["gather", "int64", "bool"]),
    "gather_index_not_tensor": (lambda: mg.gather(t(X), 1, [[0]]), TypeError, ["gather"]),
    "gather_dims": (lambda: mg.gather(t(X), 1, index_tensor([0, 1])), RuntimeError,
                    ["gather", "(2,)", "(2, 3)"]),
    "gather_too_large": (lambda: mg.gather(t(X), 1, index_tensor([[0], [1], [2]])),
                         RuntimeError, ["gather", "(3, 1)", "(2, 3)", "dim 0"]),
    "gather_out_of_range": (lambda: mg.gather(t(X), 1, index_tensor([[0, 3]])), IndexError,
                            ["gather", "index 3", "size 3", "(2, 3)", "(1, 2)"]),
    "gather_negative": (lambda: t(X).gather(0, index_tensor([[-1, 0, 0]])), IndexError,
                        ["gather", "index -1", "size 2"]),
    "gather_bad_dim": (lambda: mg.gather(t(X), 2, index_tensor([[0]])), IndexError,
                       ["gather", "dimension 2", "[-2, 1]"]),
    "scatter_src_too_small": (lambda: mg.scatter(t(X), 1, index_tensor([[0, 1]]), t([[1.0]])),
                              RuntimeError, ["scatter", "(1, 1)", "(1, 2)"]),
    "scatter_no_src": (lambda: mg.scatter(t(X), 1, index_tensor([[0]])), TypeError,
                       ["scatter"]),
    "scatter_bad_reduce": (lambda: mg.scatter(t(X), 1, index_tensor([[0]]), 1.0,
                                              reduce="max"),
                           ValueError, ["scatter", "'max'"]),
    "scatter_out_of_range": (lambda: t(X).scatter(0, index_tensor([[2, 0, 0]]), 1.0),
                             IndexError, ["scatter", "index 2", "size 2"]),
    "scatter_add_number": (lambda: mg.scatter_add(t(X), 1, index_tensor([[0]]), 1.0),
                           TypeError, ["scatter_add", "tensor"]),
    "index_select_matrix": (lambda: mg.index_select(t(X), 0, index_tensor([[0]])), IndexError,
                            ["index_select", "vector", "(1, 1)"]),
    "index_select_out_of_range": (lambda: t(X).index_select(1, index_tensor([0, 5])),
                                  IndexError, ["index_select", "index 5", "size 3", "(2, 3)"]),
    "index_select_float": (lambda: t(X).index_select(1, t([0.0])), RuntimeError,
                           ["index_select", "int64"]),
    "one_hot_float": (lambda: F.one_hot(t([1.0])), TypeError, ["one_hot", "int64", "float"]),
    "one_hot_negative": (lambda: F.one_hot(index_tensor([-1, 0])), RuntimeError,
                         ["one_hot", "[-1, 0]"]),
    "one_hot_too_large": (lambda: F.one_hot(index_tensor([3]), 3), RuntimeError,
                          ["one_hot", "[0, 3)", "[3, 3]"]),
    "one_hot_empty": (lambda: F.one_hot(index_tensor(np.zeros(0))), RuntimeError,
                      ["one_hot", "empty", "num_classes"]),
}


test_error_names_the_op_and_the_problem = error_test(ERRORS)
