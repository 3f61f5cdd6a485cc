"""Elementwise math (ops/pointwise.py, ops/rounding.py): sign, round, floor, ceil, fmod,
remainder, log1p, expm1, atan2, hypot, lerp, clamp_min and clamp_max. Gradients (float64,
first and second order) on values drawn from each op's domain, away from its kinks and
jumps; zero gradients for the step functions; PyTorch as the oracle of values, gradients
and result dtypes; the in-place forms; the errors. (Forward values against NumPy
formulas: test_forward_pointwise.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from domains import dividends_and_divisors
from helpers import (
    FEW_EXAMPLES,
    OP_SETTINGS,
    PER_LAYOUT,
    arrays,
    broadcastable_shapes,
    check_grad,
    distinct_arrays,
    draw_operands,
    floats,
    layout_cases,
    layouts,
    make_tensor,
    nonzero,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import leaf
from torch_oracle import check_against_torch, check_error_like_torch

import minigrad as mg

pytestmark = pytest.mark.device

# name -> (op, element strategies of the two operands, which broadcast together)
BINARY = {
    # a != 0: away from the cut along the negative b axis, where the angle jumps by 2 pi
    "atan2": (mg.atan2, nonzero(0.25), nonzero(0.25)),
    "hypot": (mg.hypot, nonzero(0.25), floats()),
    "lerp": (lambda a, b: mg.lerp(a, b, 0.3), floats(), floats()),
}
UNARY = {"log1p": (mg.log1p, floats(-0.75, 3.0)), "expm1": (mg.expm1, floats())}


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("layout", layout_cases())
@pytest.mark.parametrize("name", ["atan2", "hypot", "lerp"])
@PER_LAYOUT
@given(data=st.data(), shapes_=broadcastable_shapes())
def test_binary_gradients(name, layout, data, shapes_):
    op, elements_a, elements_b = BINARY[name]
    (a, b), view = draw_operands(data, shapes_, layout, [elements_a, elements_b])
    check_grad(lambda x, y: op(*view([x, y])), a, b)


@pytest.mark.parametrize("name", ["fmod", "remainder"])
@OP_SETTINGS
@given(data=st.data(), layout=layouts())
def test_modulo_gradients(name, data, layout):
    a, b = data.draw(dividends_and_divisors())
    check_grad(getattr(mg, name), leaf(a, layout), leaf(b, layout))


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_clamp_by_tensor_gradients(name, data, shape, layout):
    # distinct values 0.1 apart: input and bound never tie, where the gradient switches
    values = data.draw(distinct_arrays((2,) + shape))
    x, bound = leaf(values[0], layout), leaf(values[1], layout)
    check_grad(getattr(mg, name), x, bound)


@OP_SETTINGS
@given(data=st.data(), shapes_=broadcastable_shapes(num_shapes=3), layout=layouts())
def test_lerp_with_tensor_weight_gradients(data, shapes_, layout):
    start, end, weight = (leaf(data.draw(arrays(s)), layout) for s in shapes_)
    check_grad(mg.lerp, start, end, weight)


@pytest.mark.parametrize("name", ["log1p", "expm1"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_unary_gradients(name, data, shape, layout):
    op, elements = UNARY[name]
    check_grad(op, leaf(data.draw(arrays(shape, elements)), layout))


def _same_shape(*elements):
    return lambda data: [data.draw(arrays((2, 3), e)) for e in elements]


def _distinct_pair(data):
    """Two (2, 3) arrays with no value shared, 0.1 apart at least (no ties)."""
    return list(data.draw(distinct_arrays((2, 2, 3))))


# name -> (function of the leaves, drawer of their values); each output is a nonlinear
# function of its op's output, so that the second derivatives are not all zero
GRADGRAD = {
    "fmod": (lambda a, b: mg.fmod(a, b) ** 2, lambda data: list(data.draw(
        dividends_and_divisors()))),
    "remainder": (lambda a, b: mg.remainder(a, b) ** 2, lambda data: list(data.draw(
        dividends_and_divisors()))),
    "atan2": (mg.atan2, _same_shape(nonzero(0.25), nonzero(0.25))),
    "hypot": (mg.hypot, _same_shape(nonzero(0.25), floats())),
    "lerp": (mg.lerp, _same_shape(floats(), floats(), floats())),
    "log1p": (mg.log1p, _same_shape(floats(-0.75, 3.0))),
    "expm1": (mg.expm1, _same_shape(floats())),
    "clamp_min": (lambda a, b: mg.clamp_min(a, b) * a, _distinct_pair),
    "clamp_max": (lambda a, b: mg.clamp_max(a, b) ** 2, _distinct_pair),
}


@pytest.mark.parametrize("name", list(GRADGRAD))
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_second_derivatives(name, data, layout):
    func, draw_values = GRADGRAD[name]
    assert mg.autograd.gradgradcheck(func, [leaf(v, layout) for v in draw_values(data)])


@pytest.mark.parametrize("name", ["sign", "round", "floor", "ceil"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_step_functions_have_zero_gradients(name, data, shape, layout):
    # away from the jumps (integers, or 0 for sign) the finite differences are 0 too
    x = leaf(data.draw(arrays(shape, floats().filter(lambda v: abs(v - round(v)) > 0.01
                                                      and abs(v - round(v)) < 0.49))), layout)
    out = getattr(mg, name)(x)
    assert out.grad_fn.name == name.capitalize() + "Backward0"
    check_grad(getattr(mg, name), x)


# ----------------------------------------------------------------------------- PyTorch


def _signed(rng, shape):
    return rng.uniform(0.2, 3.0, shape) * rng.choice([-1, 1], shape)


TORCH_CASES = {
    "fmod": (lambda L, a, b: L.lib.fmod(a, b), [(2, 3), (3,)]),
    "remainder": (lambda L, a, b: L.lib.remainder(a, b), [(2, 3), (2, 1)]),
    "atan2": (lambda L, a, b: L.lib.atan2(a, b), [(2, 3), (3,)]),
    "hypot": (lambda L, a, b: L.lib.hypot(a, b), [(3,), (2, 3)]),
    "lerp": (lambda L, a, b, w: L.lib.lerp(a, b, w), [(2, 3), (3,), (2, 1)]),
    "lerp_number": (lambda L, a, b: a.lerp(b, -0.75), [(2, 3), (2, 3)]),
    "log1p": (lambda L, a: (a.abs() - 0.1).log1p(), [(2, 3)]),
    "expm1": (lambda L, a: a.expm1(), [(2, 3)]),
    "clamp_min_tensor": (lambda L, a, b: a.clamp_min(b), [(2, 3), (3,)]),
    "clamp_max_number": (lambda L, a: L.lib.clamp_max(a, 0.5), [(2, 3)]),
    # a bound equal to the input everywhere: at a tie the gradient goes to the input
    "clamp_min_ties": (lambda L, a, b: a.clamp_min(a.detach() * 1 + b * 0), [(2, 3), (2, 3)]),
    "clamp_max_ties": (lambda L, a, b: a.clamp_max(a.detach() * 1 + b * 0), [(2, 3), (2, 3)]),
    "sign": (lambda L, a: a.sign() * a, [(2, 3)]),
    "round_decimals": (lambda L, a: (a * 10).round(decimals=-1) + a, [(2, 3)]),
    "floor_ceil": (lambda L, a: a.floor() + a.ceil() * a, [(2, 3)]),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
@pytest.mark.parametrize("seed", range(3))
def test_matches_torch(name, seed):
    call, shapes_ = TORCH_CASES[name]
    rng = np.random.default_rng(seed)
    check_against_torch(call, *[_signed(rng, s) for s in shapes_], seed=seed)


# integer and mixed inputs: the result dtypes follow PyTorch's rules
DTYPE_CASES = {
    "fmod_ints": (lambda L, a: L.lib.fmod(a, 3), [[-7, 7, 5]]),
    "remainder_ints": (lambda L, a, b: L.lib.remainder(a, b), [[-7, 7, 5], [3, -3, 2]]),
    "remainder_int_by_float": (lambda L, a: L.lib.remainder(a, 2.5), [[-7, 7, 5]]),
    "atan2_ints": (lambda L, a, b: L.lib.atan2(a, b), [[1, -2, 0], [1, 1, -3]]),
    "log1p_ints": (lambda L, a: L.lib.log1p(a), [[0, 1, 5]]),
    "sign_ints_and_bools": (lambda L, a, b: (L.lib.sign(a), L.lib.sign(b)),
                            [[-3, 0, 2], [True, False, True]]),
    "floor_ceil_round_ints": (lambda L, a: (a.floor(), a.ceil(), a.round()), [[-3, 0, 2]]),
    "clamp_min_int_by_float": (lambda L, a: a.clamp_min(1.5), [[0, 1, 5]]),
    "clamp_max_float32_by_float64": (lambda L, a, b: L.lib.clamp_max(a.float(), b),
                                     [[0.5, 1.0, 2.0], [1.25]]),
}


@pytest.mark.parametrize("name", list(DTYPE_CASES))
def test_result_dtypes_match_torch(name):
    call, values = DTYPE_CASES[name]
    check_against_torch(call, *[np.asarray(v) for v in values])


ERRORS = {
    "hypot_of_ints": (lambda L, a: L.lib.hypot(a, a), [[3, 4]], ["hypot", "int64"]),
    "lerp_of_mixed_dtypes": (lambda L, a, b: L.lib.lerp(a.float(), b.double(), 0.5),
                             [[1.0], [2.0]], ["lerp", "end", "float64"]),
    "lerp_weight_dtype": (lambda L, a, b: L.lib.lerp(a.float(), a.float(), b.double()),
                          [[1.0], [0.5]], ["lerp", "weight"]),
    "fmod_int_by_zero": (lambda L, a, b: L.lib.fmod(a, b), [[3, 4], [1, 0]],
                         ["fmod", "division by zero"]),
    "remainder_int_by_zero": (lambda L, a: L.lib.remainder(a, 0), [[3, 4]], ["remainder"]),
    "floor_of_bools": (lambda L, a: L.lib.floor(a), [[True]], ["floor", "bool"]),
    "round_ints_to_decimals": (lambda L, a: L.lib.round(a, decimals=1), [[3]],
                               ["round", "decimals=1"]),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    call, values, fragments = ERRORS[name]
    check_error_like_torch(call, *values, fragments=fragments)


# ----------------------------------------------------------------------------- in place


@pytest.mark.parametrize("name, args", [("lerp_", ([2.0, -1.0, 4.0], 0.25)),
                                        ("clamp_min_", ([0.0, 0.5, 9.0],)),
                                        ("clamp_max_", (0.5,))])
def test_in_place_forms_write_through_views(name, args):
    base = make_tensor(np.arange(6.0).reshape(2, 3) - 2)
    expected = getattr(mg, name[:-1])(base[1], *[make_tensor(np.asarray(a)) if
                                                 isinstance(a, list) else a for a in args])
    row = base[1]
    out = getattr(row, name)(*[make_tensor(np.asarray(a)) if isinstance(a, list) else a
                               for a in args])
    assert out is row
    assert base.numpy()[1].tolist() == expected.tolist()
    assert base.numpy()[0].tolist() == [-2.0, -1.0, 0.0]


def test_in_place_forms_guard_the_graph():
    weight = make_tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match="lerp_: a leaf tensor that requires grad"):
        weight.lerp_(make_tensor(np.zeros(2)), 0.5)
    saved = make_tensor(np.array([3.0, -1.0]))
    product = weight * saved  # saves `saved` for weight's gradient
    saved.clamp_min_(0.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        product.sum().backward()
    ints = make_tensor(np.array([1, 2]))
    with pytest.raises(RuntimeError, match="clamp_min_: the result type .*float32 can't be cast"):
        ints.clamp_min_(1.5)
