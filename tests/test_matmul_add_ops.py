"""addmm and baddbmm (ops/matmul_add.py): beta * input + alpha * (a @ b). Gradients of
all three operands (float64, first and second order, transposed operands, input
broadcast), beta = 0 ignoring the input as PyTorch does, PyTorch as the oracle, and the
errors. (Forward values against sums of products: test_forward_linalg.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, OP_SETTINGS, arrays, check_grad, layouts, make_tensor
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, leaf
from torch_oracle import check_against_torch

import minigrad as mg

pytestmark = pytest.mark.device

SCALARS = st.sampled_from([1, 0, -1.5, 0.5])
SIDES = st.integers(1, 3)


@st.composite
def operands(draw, batched: bool):
    """(input, a, b): a (n, k) and b (k, m) (with a batch dim B first when batched), and
    an input of a shape that broadcasts to the product's."""
    batch = (draw(SIDES),) if batched else ()
    n, k, m = draw(SIDES), draw(SIDES), draw(SIDES)
    product = batch + (n, m)
    input_shape = product[draw(st.integers(0, len(product))):]
    input_shape = tuple(1 if draw(st.booleans()) else s for s in input_shape)
    return (draw(arrays(input_shape)), draw(arrays(batch + (n, k))),
            draw(arrays(batch + (k, m))))


@pytest.mark.parametrize("name", ["addmm", "baddbmm"])
@OP_SETTINGS
@given(data=st.data(), beta=SCALARS, alpha=SCALARS, layout=layouts())
def test_gradients(name, data, beta, alpha, layout):
    c, a, b = data.draw(operands(batched=name == "baddbmm"))
    op = getattr(mg, name)
    check_grad(lambda x, y, z: op(x, y, z, beta=beta, alpha=alpha),
               leaf(c, layout), leaf(a, layout), leaf(b, layout))


def test_beta_zero_ignores_the_input_but_gives_it_a_zero_gradient():
    c = make_tensor(np.array([[np.nan, np.inf]]), requires_grad=True)
    a = make_tensor(np.ones((2, 3)), requires_grad=True)
    out = mg.addmm(c, a, make_tensor(np.ones((3, 2))), beta=0, alpha=2)
    assert out.tolist() == [[6.0, 6.0], [6.0, 6.0]] and out.grad_fn.name == "AddmmBackward0"
    out.sum().backward()
    assert c.grad.tolist() == [[0.0, 0.0]] and a.grad.tolist() == [[4.0] * 3] * 2


@pytest.mark.parametrize("name", ["addmm", "baddbmm"])
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_second_derivatives(name, data, layout):
    c, a, b = (leaf(v, layout) for v in data.draw(operands(batched=name == "baddbmm")))
    op = getattr(mg, name)
    assert mg.autograd.gradgradcheck(lambda x, y, z: op(x * x, y, z * y.sum(), beta=0.5,
                                                         alpha=-2), [c, a, b])


TORCH_CASES = {
    "addmm": (lambda L, c, a, b: L.lib.addmm(c, a, b), [(2, 4), (2, 3), (3, 4)]),
    "addmm_scaled_row_input": (lambda L, c, a, b: c.addmm(a, b, beta=-0.5, alpha=3),
                               [(4,), (2, 3), (3, 4)]),
    "addmm_transposed": (lambda L, c, a, b: L.lib.addmm(c, a.T, b.T, alpha=0.25),
                         [(1, 1), (3, 2), (4, 3)]),
    "baddbmm": (lambda L, c, a, b: L.lib.baddbmm(c, a, b, beta=2), [(2, 1, 4), (2, 1, 3),
                                                                     (2, 3, 4)]),
    "baddbmm_beta_zero": (lambda L, c, a, b: c.baddbmm(a, b, beta=0, alpha=-1),
                          [(3, 2), (2, 3, 2), (2, 2, 2)]),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name):
    call, shapes_ = TORCH_CASES[name]
    rng = np.random.default_rng(11)
    check_against_torch(call, *[rng.standard_normal(s) for s in shapes_])


def test_integers_match_torch():
    rng = np.random.default_rng(2)
    check_against_torch(lambda L, c, a, b: L.lib.addmm(c, a, b, beta=2, alpha=-3),
                        *[rng.integers(-5, 5, s) for s in [(2, 2), (2, 3), (3, 2)]])


def _t(*shape, dtype=np.float64):
    return make_tensor(np.ones(shape, dtype=dtype))


ERRORS = {
    "inner_sizes": (lambda: mg.addmm(_t(2, 2), _t(2, 3), _t(2, 2)), RuntimeError,
                    ["addmm", "(2, 3) @ (2, 2)", "3 and 2"]),
    "vector_operand": (lambda: mg.addmm(_t(2), _t(3), _t(3, 2)), RuntimeError,
                       ["addmm", "2-D", "(3,)"]),
    "input_too_large": (lambda: mg.addmm(_t(3, 2), _t(2, 3), _t(3, 2)), RuntimeError,
                        ["addmm", "input (3, 2)", "(2, 2)"]),
    "batch_sizes": (lambda: mg.baddbmm(_t(1), _t(2, 2, 3), _t(3, 3, 2)), RuntimeError,
                    ["baddbmm", "(2, 2, 3)", "(3, 3, 2)"]),
    "dtypes": (lambda: mg.addmm(_t(2, 2, dtype=np.float32), _t(2, 3), _t(3, 2)), RuntimeError,
               ["addmm", "float32", "float64"]),
    "float_scale_for_ints": (lambda: mg.addmm(_t(2, 2, dtype=np.int64), _t(2, 3, dtype=np.int64),
                                              _t(3, 2, dtype=np.int64), beta=0.5),
                             RuntimeError, ["addmm", "integers", "beta=0.5"]),
}


test_errors_name_the_op_and_the_problem = error_test(ERRORS)
