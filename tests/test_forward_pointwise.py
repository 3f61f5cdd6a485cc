"""Forward values of the elementwise ops of ops/pointwise.py and ops/rounding.py (sign,
round, floor, ceil, fmod, remainder, log1p, expm1, atan2, hypot, lerp, clamp_min,
clamp_max and the in-place lerp_, clamp_min_, clamp_max_) against formulas written from
each op's definition, with broadcasting, integer inputs and the exact cases each op is
for. No PyTorch needed (see numpy_oracle)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from domains import dividends_and_divisors
from helpers import OP_SETTINGS, arrays, broadcastable_shapes, floats, layouts, nonzero, shapes
from hypothesis import given
from hypothesis import strategies as st
from numpy_oracle import assert_forward, assert_op, tensor

import minigrad.ops as ops

pytestmark = pytest.mark.device


def _atan2(a, b):
    """atan(a / b) moved into the quadrant of the point (b, a) (b != 0)."""
    return np.arctan(a / b) + np.where(b < 0, np.where(a >= 0, np.pi, -np.pi), 0.0)


# name -> (formula, element strategies of the two operands, which broadcast together)
BINARY = {
    "atan2": (_atan2, nonzero(0.25), nonzero(0.25)),
    "hypot": (lambda a, b: np.sqrt(a * a + b * b), floats(), floats()),
    "clamp_min": (lambda a, b: np.where(a < b, b, a), floats(), floats()),
    "clamp_max": (lambda a, b: np.where(a > b, b, a), floats(), floats()),
}
UNARY = {
    "log1p": (lambda x: np.log(1 + x), floats(-0.75, 3.0)),
    "expm1": (lambda x: np.exp(x) - 1, floats()),
    "sign": (lambda x: (x > 0) * 1.0 - (x < 0), st.one_of(st.just(0.0), floats())),
    "floor": (lambda x: x // 1, st.one_of(st.integers(-3, 3).map(float), floats())),
    "ceil": (lambda x: -(-x // 1), st.one_of(st.integers(-3, 3).map(float), floats())),
}


@pytest.mark.parametrize("name", list(BINARY))
@OP_SETTINGS
@given(data=st.data(), shapes_=broadcastable_shapes(), layout=layouts())
def test_binary(name, data, shapes_, layout):
    formula, elements_a, elements_b = BINARY[name]
    a = data.draw(arrays(shapes_[0], elements_a))
    b = data.draw(arrays(shapes_[1], elements_b))
    assert_op(name, (tensor(a, layout), tensor(b, layout)), formula(a, b))


@pytest.mark.parametrize("name, formula", [("fmod", lambda a, b: a - np.trunc(a / b) * b),
                                           ("remainder", lambda a, b: a - np.floor(a / b) * b)])
@OP_SETTINGS
@given(data=st.data(), layout=layouts())
def test_modulo(name, formula, data, layout):
    a, b = data.draw(dividends_and_divisors())
    assert_op(name, (tensor(a, layout), tensor(b, layout)), formula(a, b))


@pytest.mark.parametrize("name", list(UNARY))
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_unary(name, data, shape, layout):
    formula, elements = UNARY[name]
    x = data.draw(arrays(shape, elements))
    # log(1 + x) and exp(x) - 1 lose relative accuracy near 0: compared absolutely there
    assert_forward(getattr(ops, name)(tensor(x, layout)), formula(x), rtol=1e-12, atol=1e-15)


@OP_SETTINGS
@given(data=st.data(), shapes_=broadcastable_shapes(num_shapes=3), layout=layouts())
def test_lerp(data, shapes_, layout):
    start, end, weight = (data.draw(arrays(s)) for s in shapes_)
    expected = start + weight * (end - start)
    assert_op("lerp", (tensor(start, layout), tensor(end, layout), tensor(weight)), expected)
    assert_op("lerp", (tensor(start, layout), tensor(end), -0.75),
              start + -0.75 * (end - start))


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), decimals=st.integers(-1, 2), layout=layouts())
def test_round(data, shape, decimals, layout):
    # k + f with |f| <= 0.45: rint never meets a half, where floor(y + 0.5) would differ
    scaled = data.draw(arrays(shape, st.builds(lambda k, f: k + f, st.integers(-30, 30),
                                               floats(-0.45, 0.45))))
    x = scaled / 10.0**decimals
    expected = np.floor(x * 10.0**decimals + 0.5) / 10.0**decimals
    assert_op("round", (tensor(x, layout),), expected, decimals=decimals)


def test_the_exact_cases_each_op_is_for():
    halves = tensor(np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.25]))
    assert ops.round(halves).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 0.0]  # to even
    assert ops.round(halves, decimals=1).tolist()[-1] == 0.2
    tiny = tensor(np.array([1e-20, -3e-18]))
    assert ops.log1p(tiny).tolist() == [1e-20, -3e-18]  # log(1 + x) would give 0
    assert ops.expm1(tiny).tolist() == [1e-20, -3e-18]
    start, end = tensor(np.array([0.1, -7.3, 1e8])), tensor(np.array([0.7, 2.9, 3.0]))
    assert ops.lerp(start, end, 1.0).tolist() == end.tolist()  # not 3.0000000149...
    assert ops.lerp(start, end, 0.0).tolist() == start.tolist()
    on_axis = ops.atan2(tensor(np.array([1.0, -1.0, 0.0])), tensor(np.zeros(3)))
    assert on_axis.tolist() == [math.pi / 2, -math.pi / 2, 0.0]


def test_integer_inputs():
    a, b = np.array([-7, 7, 5, -5]), np.array([3, -3, 2, 2])
    assert_op("fmod", (tensor(a), tensor(b)), a - (np.abs(a) // np.abs(b)) * np.sign(a)
              * np.abs(b))
    assert_op("remainder", (tensor(a), tensor(b)), a - (a // b) * b)
    assert_op("sign", (tensor(a),), np.array([-1, 1, 1, -1]))
    for name in ("floor", "ceil", "round"):
        assert_op(name, (tensor(a),), a)
    assert_op("sign", (tensor(np.array([True, False])),), np.array([True, False]))
    assert_op("clamp_min", (tensor(a), 1.5), np.where(a < 1.5, 1.5, a).astype(np.float32))


@pytest.mark.parametrize("name, args, formula", [
    ("lerp_", ([2.0, -1.0, 4.0], 0.25), lambda x: x + 0.25 * (np.array([2.0, -1, 4]) - x)),
    ("clamp_min_", ([0.0, 0.5, 9.0],), lambda x: np.maximum(x, [0.0, 0.5, 9.0])),
    ("clamp_max_", (0.5,), lambda x: np.minimum(x, 0.5)),
])
def test_in_place_forms_write_the_result_into_the_tensor(name, args, formula):
    x = np.arange(6.0).reshape(2, 3) - 2
    target = tensor(x)
    out = getattr(ops, name)(target, *[tensor(np.array(a)) if isinstance(a, list) else a
                                       for a in args])
    assert out is target
    assert_forward(target, formula(x))
