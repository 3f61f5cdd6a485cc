"""What the op test files by subject (test_index_ops.py, test_einsum_ops.py, ...) share:
leaves and index tensors on the test device, the runner of a second-derivative case and
the check of an error case, and the two tests each file builds from its table of them:

    test_gradgradcheck = gradgrad_test(GRADGRAD)
    test_error_names_the_op_and_the_problem = error_test(ERRORS)
"""
from __future__ import annotations

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, arrays, distinct_arrays, layouts, make_tensor
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg


def leaf(array, layout: str = "contiguous"):
    """A float leaf that requires grad, on the test device, in `layout`."""
    return make_tensor(array, requires_grad=True, layout=layout)


def index_tensor(array):
    """An int64 tensor (indices, counts) on the test device."""
    return make_tensor(np.asarray(array, dtype=np.int64))


def check_gradgrad_case(data, layout: str, func, specs) -> None:
    """gradgradcheck of func on leaves drawn from specs, a list of (shape, elements) with
    elements a strategy for the values, or "distinct" for distinct values (no ties)."""
    inputs = [
        leaf(data.draw(distinct_arrays(shape) if elements == "distinct" else
                       arrays(shape, elements)), layout)
        for shape, elements in specs
    ]
    assert mg.autograd.gradgradcheck(func, inputs)


def check_error_case(func, exception: type, fragments: list[str]) -> None:
    """func() raises `exception` whose message holds every fragment (the op's name, the
    shapes or values involved, what was expected)."""
    with pytest.raises(exception) as caught:
        func()
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def gradgrad_test(cases: dict):
    """A test of each case of `cases` (name -> (func, specs), see check_gradgrad_case),
    on leaves in each layout."""
    @pytest.mark.parametrize("name", list(cases))
    @FEW_EXAMPLES
    @given(data=st.data(), layout=layouts())
    def test(name, data, layout):
        check_gradgrad_case(data, layout, *cases[name])
    return test


def error_test(cases: dict):
    """A test of each case of `cases` (name -> (func, exception, fragments), see
    check_error_case)."""
    @pytest.mark.parametrize("name", list(cases))
    def test(name):
        check_error_case(*cases[name])
    return test
