"""einsum: gradients (float64, central differences; see helpers.check_grad) of drawn
operand sizes for matmul, batched, implicit-output, trace, diagonal, ellipsis and
three-operand equations on contiguous, transposed and strided leaves; second derivatives;
and the errors a malformed equation or mismatched operands raise."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, arrays, check_grad, floats, layouts, make_tensor
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, gradgrad_test, leaf

import minigrad as mg

pytestmark = pytest.mark.device

# equations and, per operand, its letters (with "." for one broadcast dim of "...")
EINSUM = {
    "matmul": "ij,jk->ik",
    "batched": "bij,bjk->bik",
    "implicit": "ij,jk",
    "trace": "ii",
    "diagonal": "ii->i",
    "diagonal_mixed": "iij,jk->ik",
    "transpose_ellipsis": "...ij->...ji",
    "ellipsis_broadcast": "...ij,jk",
    "sum_all": "ij->",
    "outer": "i,j->ij",
    "three_operands": "ab,bc,cd->ad",
    "sum_only_in_one": "ij,jk->i",
    "ellipsis_summed": "...i->i",
}


@pytest.mark.parametrize("name", list(EINSUM))
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_einsum(name, data, layout):
    equation = EINSUM[name]
    sizes = {c: data.draw(st.integers(1, 3)) for c in "abcdijk"}
    terms = equation.split("->")[0].split(",")
    operands = []
    for term in terms:
        batch = tuple(data.draw(st.integers(1, 2)) for _ in range(data.draw(
            st.integers(0, 2)))) if "..." in term else ()
        shape = batch + tuple(sizes[c] for c in term.replace("...", ""))
        operands.append(leaf(data.draw(arrays(shape)), layout))
    if name == "ellipsis_broadcast":  # a size-1 batch dim broadcasts against the other's
        operands[0] = leaf(data.draw(arrays((1,) + tuple(operands[0].shape))), layout)
    check_grad(lambda *ts: mg.einsum(equation, *ts), *operands)


# name -> (function, list of (shape, elements) for its inputs)
GRADGRAD = {
    "einsum_matmul": (lambda a, b: mg.einsum("bij,bjk->bik", a, b),
                      [((2, 2, 3), floats()), ((2, 3, 2), floats())]),
    "einsum_trace_square": (lambda a: mg.einsum("ii", a * a), [((3, 3), floats())]),
    "einsum_ellipsis": (lambda a, b: mg.einsum("...i,i->...", a, b) ** 2,
                        [((2, 3), floats()), ((3,), floats())]),
}


test_gradgradcheck = gradgrad_test(GRADGRAD)


def t(values):
    return make_tensor(np.asarray(values))


X = np.arange(6.0).reshape(2, 3)

ERRORS = {
    # name: (callable, exception type, fragments the message must contain)
    "einsum_operand_count": (lambda: mg.einsum("ij,jk", t(X)), RuntimeError,
                             ["einsum", "2 operand", "1 tensor"]),
    "einsum_bad_character": (lambda: mg.einsum("i1->i", t(X)), RuntimeError,
                             ["einsum", "invalid subscript"]),
    "einsum_size_mismatch": (lambda: mg.einsum("ij,jk", t(X), t(X)), RuntimeError,
                             ["einsum", "subscript j", "size 3", "2", "(2, 3)"]),
    "einsum_diagonal_sizes": (lambda: mg.einsum("ii", t(X)), RuntimeError,
                              ["einsum", "subscript i", "repeated", "2", "3"]),
    "einsum_output_unknown": (lambda: mg.einsum("ij->k", t(X)), RuntimeError,
                              ["einsum", "output subscript k"]),
    "einsum_output_twice": (lambda: mg.einsum("ij->ii", t(X)), RuntimeError,
                            ["einsum", "more than once"]),
    "einsum_dims": (lambda: mg.einsum("ijk->i", t(X)), RuntimeError,
                    ["einsum", "operand 0", "2 dims", "(2, 3)", "names 3"]),
    "einsum_two_ellipses": (lambda: mg.einsum("...i...->i", t(X)), RuntimeError,
                            ["einsum", "more than one '...'"]),
    "einsum_not_tensor": (lambda: mg.einsum("ij", X), TypeError, ["einsum", "ndarray"]),
}


test_error_names_the_op_and_the_problem = error_test(ERRORS)
