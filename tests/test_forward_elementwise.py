"""Forward values of the elementwise ops (math functions, arithmetic with broadcasting and
Python numbers, comparisons and logic, where/masked_fill/clamp/triu/tril) against NumPy
formulas written from each op's definition, on contiguous, transposed and strided inputs.
No PyTorch needed (see numpy_oracle)."""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest
from helpers import OP_SETTINGS, floats, layouts
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_oracle import (
    assert_forward,
    assert_op,
    erf,
    generic_arrays,
    generic_shapes,
    sigmoid,
    tensor,
)

import minigrad.ops as ops

pytestmark = pytest.mark.device

ANY = (-3.0, 3.0)
POSITIVE = (0.25, 4.0)

# case: (op name, keyword arguments, NumPy formula, range of the drawn values)
UNARY = {
    "abs": ("abs", {}, lambda x: np.where(x < 0, -x, x), ANY),
    "absolute": ("absolute", {}, lambda x: np.where(x < 0, -x, x), ANY),
    "cos": ("cos", {}, np.cos, (-6.0, 6.0)),
    "sin": ("sin", {}, np.sin, (-6.0, 6.0)),
    "exp": ("exp", {}, np.exp, ANY),
    "log": ("log", {}, np.log, POSITIVE),
    "sqrt": ("sqrt", {}, np.sqrt, POSITIVE),
    "rsqrt": ("rsqrt", {}, lambda x: 1.0 / np.sqrt(x), POSITIVE),
    "tanh": ("tanh", {}, lambda x: (np.exp(2 * x) - 1) / (np.exp(2 * x) + 1), ANY),
    "sigmoid": ("sigmoid", {}, sigmoid, (-6.0, 6.0)),
    "relu": ("relu", {}, lambda x: np.where(x > 0, x, 0.0), ANY),
    "erf": ("erf", {}, erf, ANY),
    "gelu": ("gelu", {}, lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), ANY),
    "gelu_tanh": ("gelu", {"approximate": "tanh"}, lambda x: 0.5 * x * (
        1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))), ANY),
    "neg": ("neg", {}, lambda x: 0.0 - x, ANY),
    "negative": ("negative", {}, lambda x: 0.0 - x, ANY),
    "square": ("square", {}, lambda x: x * x, ANY),
    "clamp": ("clamp", {"min": -0.5, "max": 1.0}, lambda x: np.where(
        x < -0.5, -0.5, np.where(x > 1.0, 1.0, x)), ANY),
    "clamp_min": ("clamp", {"min": 0.25}, lambda x: np.where(x < 0.25, 0.25, x), ANY),
    "clip_max": ("clip", {"max": -1.0}, lambda x: np.where(x > -1.0, -1.0, x), ANY),
    "pow_int": ("pow", {"exponent": 3}, lambda x: x * x * x, ANY),
    "pow_negative": ("pow", {"exponent": -1.5}, lambda x: 1.0 / (x * np.sqrt(x)), POSITIVE),
}


@pytest.mark.parametrize("case", list(UNARY))
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_unary(case, data, shape, layout):
    name, kwargs, formula, (low, high) = UNARY[case]
    values = data.draw(generic_arrays(shape, low, high))
    assert_op(name, (tensor(values, layout),), formula(values), **kwargs)


def nonzero_values(low, high):
    """(low, high) with an interval around zero removed: a divisor's range."""
    return st.one_of(floats(low, -0.25), floats(0.25, high))


# case: (op name, keyword arguments, NumPy formula, range of a, range of b)
BINARY = {
    "add": ("add", {}, lambda a, b: a + b, ANY, ANY),
    "add_alpha": ("add", {"alpha": 2.5}, lambda a, b: a + 2.5 * b, ANY, ANY),
    "sub": ("sub", {}, lambda a, b: a - b, ANY, ANY),
    "sub_alpha": ("sub", {"alpha": -0.5}, lambda a, b: a + 0.5 * b, ANY, ANY),
    "subtract": ("subtract", {}, lambda a, b: a - b, ANY, ANY),
    "mul": ("mul", {}, lambda a, b: a * b, ANY, ANY),
    "multiply": ("multiply", {}, lambda a, b: a * b, ANY, ANY),
    "div": ("div", {}, lambda a, b: a / b, ANY, "divisor"),
    "divide": ("divide", {}, lambda a, b: a / b, ANY, "divisor"),
    "true_divide": ("true_divide", {}, lambda a, b: a / b, ANY, "divisor"),
    "div_trunc": ("div", {"rounding_mode": "trunc"}, lambda a, b: np.trunc(a / b), ANY,
                  "divisor"),
    "div_floor": ("div", {"rounding_mode": "floor"}, lambda a, b: np.floor(a / b), ANY,
                  "divisor"),
    "floor_divide": ("floor_divide", {}, lambda a, b: np.floor(a / b), ANY, "divisor"),
    "pow": ("pow", {}, lambda a, b: np.exp(b * np.log(a)), POSITIVE, ANY),
    "maximum": ("maximum", {}, lambda a, b: np.where(a > b, a, b), ANY, ANY),
    "minimum": ("minimum", {}, lambda a, b: np.where(a < b, a, b), ANY, ANY),
}


def broadcastable_shapes():
    """Two shapes that broadcast together, with size-1 and missing dims on either side."""
    return hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3,
                                             min_side=1, max_side=3).map(lambda s: s.input_shapes)


def draw_values(data, shape, domain):
    if domain == "divisor":
        return data.draw(hnp.arrays(np.float64, shape, elements=nonzero_values(-3.0, 3.0)))
    return data.draw(generic_arrays(shape, *domain))


@pytest.mark.parametrize("case", list(BINARY))
@OP_SETTINGS
@given(data=st.data(), shapes=broadcastable_shapes(), layout=layouts())
def test_binary_broadcasting(case, data, shapes, layout):
    name, kwargs, formula, domain_a, domain_b = BINARY[case]
    a, b = draw_values(data, shapes[0], domain_a), draw_values(data, shapes[1], domain_b)
    assert_op(name, (tensor(a, layout), tensor(b)), formula(a, b), **kwargs)


@pytest.mark.parametrize("case", ["add", "sub", "mul", "div", "pow", "maximum", "minimum"])
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), number=nonzero_values(-2.0, 2.0))
def test_binary_with_a_python_number(case, data, shape, number):
    name, kwargs, formula, domain_a, _ = BINARY[case]
    a = data.draw(generic_arrays(shape, *(POSITIVE if domain_a == POSITIVE else ANY)))
    assert_op(name, (tensor(a), number), formula(a, np.full(shape, number)), **kwargs)


REFLECTED = {
    "radd": (lambda n, t: n + t, lambda n, a: n + a),
    "rsub": (lambda n, t: n - t, lambda n, a: n - a),
    "rmul": (lambda n, t: n * t, lambda n, a: n * a),
    "rtruediv": (lambda n, t: n / t, lambda n, a: n / a),
    "rpow": (lambda n, t: abs(n) ** t, lambda n, a: np.exp(a * np.log(abs(n)))),
}


@pytest.mark.parametrize("case", list(REFLECTED))
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), number=nonzero_values(-2.0, 2.0))
def test_python_number_on_the_left(case, data, shape, number):
    ours, formula = REFLECTED[case]
    a = data.draw(hnp.arrays(np.float64, shape, elements=nonzero_values(-3.0, 3.0)))
    assert_forward(ours(number, tensor(a)), formula(number, a))


@OP_SETTINGS
@given(data=st.data(), shapes=broadcastable_shapes())
def test_integer_arithmetic_keeps_int64_and_true_division_gives_float32(data, shapes):
    a = data.draw(hnp.arrays(np.int64, shapes[0], elements=st.integers(-20, 20)))
    b = data.draw(hnp.arrays(np.int64, shapes[1], elements=st.integers(1, 7)))
    b = b * data.draw(st.sampled_from([-1, 1]))
    ta, tb = tensor(a), tensor(b)
    assert_forward(ops.add(ta, tb), a + b)
    assert_forward(ops.mul(ta, tb), a * b)
    assert_forward(ops.floor_divide(ta, tb), np.floor(a / b).astype(np.int64))
    assert_forward(ops.div(ta, tb, rounding_mode="trunc"), np.trunc(a / b).astype(np.int64))
    assert_forward(ops.div(ta, tb), (a / b).astype(np.float32), rtol=1e-6)


COMPARISONS = {
    "eq": operator.eq, "ne": operator.ne, "not_equal": operator.ne,
    "lt": operator.lt, "less": operator.lt, "le": operator.le, "less_equal": operator.le,
    "gt": operator.gt, "greater": operator.gt, "ge": operator.ge, "greater_equal": operator.ge,
}


def tied_values(shape):
    """Few distinct values, so equal pairs are common."""
    return hnp.arrays(np.float64, shape, elements=st.sampled_from([-1.0, 0.0, 0.5, 2.0]))


@pytest.mark.parametrize("name", list(COMPARISONS))
@OP_SETTINGS
@given(data=st.data(), shapes=broadcastable_shapes(), layout=layouts())
def test_comparisons(name, data, shapes, layout):
    a, b = data.draw(tied_values(shapes[0])), data.draw(tied_values(shapes[1]))
    compare = COMPARISONS[name]
    expected = np.array([compare(x, y) for x, y in np.nditer(np.broadcast_arrays(a, b))],
                        dtype=bool).reshape(np.broadcast_shapes(a.shape, b.shape))
    assert_op(name, (tensor(a, layout), tensor(b)), expected)
    assert_op(name, (tensor(a, layout), 0.5), compare(a, 0.5))


@OP_SETTINGS
@given(data=st.data(), shapes=broadcastable_shapes(), layout=layouts())
def test_logical_ops_treat_nonzero_as_true(data, shapes, layout):
    a, b = data.draw(tied_values(shapes[0])), data.draw(tied_values(shapes[1]))
    truth_a, truth_b = a != 0, b != 0
    assert_op("logical_and", (tensor(a, layout), tensor(b)), truth_a & truth_b)
    assert_op("logical_or", (tensor(a, layout), tensor(b)), truth_a | truth_b)
    assert_op("logical_not", (tensor(a, layout),), ~truth_a)


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts(), keepdim=st.booleans())
def test_any_all(data, shape, layout, keepdim):
    a = data.draw(tied_values(shape))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    truth = a != 0
    count = truth.sum(axis=dim, keepdims=keepdim)
    assert_op("any", (tensor(a, layout),), count > 0, dim=dim, keepdim=keepdim)
    assert_op("all", (tensor(a, layout),), count == shape[dim], dim=dim, keepdim=keepdim)
    assert_op("any", (tensor(a, layout),), np.array(truth.sum() > 0))
    assert_op("all", (tensor(a, layout),), np.array(truth.sum() == truth.size))


SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -1.5, 2.0]


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_isnan_isinf_isfinite(data, shape, layout):
    a = data.draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(SPECIAL)))
    not_a_number = a != a
    infinite = (a == np.inf) | (a == -np.inf)
    assert_op("isnan", (tensor(a, layout),), not_a_number)
    assert_op("isinf", (tensor(a, layout),), infinite)
    assert_op("isfinite", (tensor(a, layout),), ~(not_a_number | infinite))


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts(), equal_nan=st.booleans())
def test_isclose_allclose(data, shape, layout, equal_nan):
    """Differences drawn around the default tolerance |a - b| <= 1e-8 + 1e-5 |b|."""
    a = data.draw(generic_arrays(shape))
    offsets = data.draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(
        [0.0, 5e-9, 2e-8, 3e-6, 1e-4])))
    b = a + offsets
    nan_at = data.draw(hnp.arrays(bool, shape))
    a, b = np.where(nan_at, np.nan, a), np.where(nan_at, np.nan, b)
    close = np.abs(a - b) <= 1e-8 + 1e-5 * np.abs(b)
    expected = close | (nan_at & equal_nan)
    assert_op("isclose", (tensor(a, layout), tensor(b)), expected, equal_nan=equal_nan)
    assert_op("allclose", (tensor(a, layout), tensor(b)), np.array(expected.all()),
              equal_nan=equal_nan)


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_equal(data, shape, layout):
    a = data.draw(generic_arrays(shape))
    changed = a.copy()
    changed[(0,) * len(shape)] += 1.0
    assert_op("equal", (tensor(a, layout), tensor(a.copy())), np.array(True))
    assert_op("equal", (tensor(a, layout), tensor(changed)), np.array(False))
    assert_op("equal", (tensor(a, layout), tensor(a[..., :1])), np.array(False))


@OP_SETTINGS
@given(data=st.data(), shapes=broadcastable_shapes(), layout=layouts())
def test_where_and_masked_fill(data, shapes, layout):
    out_shape = np.broadcast_shapes(*shapes)
    condition = data.draw(hnp.arrays(bool, shapes[1]))
    a = data.draw(generic_arrays(out_shape))
    b = data.draw(generic_arrays(shapes[0]))
    picked = np.array([x if c else y for c, x, y in np.nditer(
        np.broadcast_arrays(condition, a, b))]).reshape(out_shape)
    assert_op("where", (tensor(condition), tensor(a, layout), tensor(b)), picked)
    filled = np.array([-7.5 if c else x for c, x in np.nditer(
        np.broadcast_arrays(condition, a))]).reshape(out_shape)
    assert_op("masked_fill", (tensor(a, layout), tensor(condition), -7.5), filled)


@pytest.mark.parametrize("name", ["triu", "tril"])
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(min_dims=2), layout=layouts(),
       diagonal=st.integers(-3, 3))
def test_triu_tril(name, data, shape, layout, diagonal):
    """triu keeps x[..., i, j] where j - i >= diagonal; tril where j - i <= diagonal."""
    x = data.draw(generic_arrays(shape))
    rows, cols = np.indices(shape[-2:])
    keep = cols - rows >= diagonal if name == "triu" else cols - rows <= diagonal
    assert_op(name, (tensor(x, layout),), np.where(keep, x, 0.0), diagonal=diagonal)
