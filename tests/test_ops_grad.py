"""Hypothesis gradient checks for every differentiable op of the contract.

Each test draws float64 inputs from the op's domain (positive for log/sqrt/rsqrt, away
from the kink for abs/relu/clamp/max, distinct values where ties would make the gradient
ambiguous), small shapes with size-1 dims and 0-d tensors, mutually broadcastable shapes
for binary ops, and contiguous, transposed, strided or sliced (non-contiguous) leaves. Ops
of several arrays run once per operand layout (helpers.layout_cases: every operand in one
layout, broadcast views included, or each its own), so that each layout reaches each
operand in every run. helpers.check_grad compares the full Jacobian and a random-upstream
backward() with central differences.
"""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    FEW_EXAMPLES,
    OP_SETTINGS,
    PER_LAYOUT,
    arrays,
    away_from,
    broadcastable_shapes,
    check_grad,
    dims_of,
    distinct_arrays,
    draw_operands,
    floats,
    layout_cases,
    layouts,
    make_tensor,
    nonzero,
    positive,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_cases import leaf

import minigrad as mg

pytestmark = pytest.mark.device


# ----------------------------------------------------------------------------- binary


BINARY = {
    "add": (lambda a, b: a + b, floats(), floats()),
    "sub": (lambda a, b: a - b, floats(), floats()),
    "mul": (lambda a, b: a * b, floats(), floats()),
    "div": (lambda a, b: a / b, floats(), nonzero(0.5)),
    "pow_tensor_exponent": (lambda a, b: a**b, positive(0.25, 3.0), floats(-2.0, 2.0)),
}


@pytest.mark.parametrize("layout", layout_cases())
@pytest.mark.parametrize("name", list(BINARY))
@PER_LAYOUT
@given(data=st.data(), shapes_=broadcastable_shapes())
def test_binary_broadcast(name, layout, data, shapes_):
    op, elements_a, elements_b = BINARY[name]
    (a, b), view = draw_operands(data, shapes_, layout, [elements_a, elements_b])
    check_grad(lambda x, y: op(*view([x, y])), a, b)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), scalar=nonzero(0.5))
def test_binary_with_python_scalar(name, data, shape, scalar):
    op = BINARY[name][0]
    x = leaf(data.draw(arrays(shape, nonzero(0.5))))
    check_grad(lambda t: op(t, scalar), x)
    check_grad(lambda t: op(scalar, t), x)  # reflected operators


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_neg(data, shape, layout):
    check_grad(lambda t: -t, leaf(data.draw(arrays(shape)), layout))


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, -1, -2, 0.5, -1.5, 2.5])
@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_pow_scalar_exponent(exponent, data, shape, layout):
    integral = float(exponent).is_integer()
    # integer exponents take any base (non-zero when negative); others need a base > 0
    elements = (floats() if exponent >= 0 else nonzero(0.5)) if integral else positive()
    x = leaf(data.draw(arrays(shape, elements)), layout)
    check_grad(lambda t: t**exponent, x)


@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(), base=floats(0.5, 3.0))
def test_pow_scalar_base(data, shape, base):
    """base ** x with a Python-number base (the exponent is the tensor)."""
    check_grad(lambda t: base**t, leaf(data.draw(arrays(shape, floats(-2.0, 2.0)))))


# ----------------------------------------------------------------------------- matmul


MATMUL_KINDS = ("dot", "matrix_vector", "vector_matrix", "matrix_matrix", "batched_matrix",
                "batched")


@st.composite
def matmul_shapes(draw, kind):
    """Shapes (a, b) of one kind: 1-D @ 1-D, n-D @ 1-D, 1-D @ n-D, 2-D @ 2-D, batched @ 2-D
    (a shared weight) and batched @ batched with broadcast batch dims; n, k, m of 2 or 3,
    so that no transpose goes unseen."""
    n, k, m = (draw(st.integers(2, 3)) for _ in range(3))
    batch_a, batch_b = draw(broadcastable_shapes(min_dims=1, max_dims=2))
    shape_a = {"dot": (k,), "vector_matrix": (k,), "matrix_matrix": (n, k)}.get(kind)
    shape_b = {"dot": (k,), "matrix_vector": (k,), "matrix_matrix": (k, m),
               "batched_matrix": (k, m)}.get(kind)
    return shape_a or batch_a + (n, k), shape_b or batch_b + (k, m)


@pytest.mark.parametrize("layout", layout_cases())
@PER_LAYOUT
@given(data=st.data(), kind=st.sampled_from(MATMUL_KINDS))
def test_matmul(layout, data, kind):
    (a, b), view = draw_operands(data, data.draw(matmul_shapes(kind)), layout)
    check_grad(lambda x, y: mg.matmul(*view([x, y])), a, b)  # `@` is below


@pytest.mark.parametrize("batched", [False, True])
@FEW_EXAMPLES
@given(data=st.data(), sizes=st.tuples(*[st.integers(2, 4)] * 3))
def test_matmul_with_transposed_weight(batched, data, sizes):
    """x @ w.T and w.T @ y, as in a linear layer and its backward: a transposed view of a
    contiguous weight, square or not."""
    rows, features, out_features = sizes
    x = leaf(data.draw(arrays(((2,) if batched else ()) + (rows, features))))
    w = leaf(data.draw(arrays((out_features, features))))
    y = leaf(data.draw(arrays((out_features, rows))))
    check_grad(lambda t, u: t @ u.T, x, w)
    check_grad(lambda u, t: u.T @ t, w, y)


# ----------------------------------------------------------------------------- unary


UNARY = {
    "exp": (lambda t: t.exp(), floats()),
    "log": (lambda t: t.log(), positive()),
    "sqrt": (lambda t: t.sqrt(), positive()),
    "rsqrt": (lambda t: t.rsqrt(), positive()),
    "abs": (lambda t: t.abs(), nonzero(0.1)),
    "tanh": (lambda t: t.tanh(), floats()),
    "sigmoid": (lambda t: t.sigmoid(), floats(-6.0, 6.0)),
    "relu": (lambda t: t.relu(), nonzero(0.1)),
    "gelu": (lambda t: t.gelu(), floats()),
    "gelu_tanh": (lambda t: t.gelu(approximate="tanh"), floats()),
    "erf": (lambda t: mg.erf(t), floats()),
    "clamp": (lambda t: t.clamp(-0.5, 0.5), away_from([-0.5, 0.5], 0.1)),
    "clamp_min": (lambda t: t.clamp(min=-0.5), away_from([-0.5], 0.1)),
    "clamp_max": (lambda t: mg.clamp(t, max=0.5), away_from([0.5], 0.1)),
    "free_functions": (lambda t: mg.exp(mg.tanh(t)) + mg.sigmoid(t) + mg.relu(t).abs(),
                       nonzero(0.1)),
}


@pytest.mark.parametrize("name", list(UNARY))
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_unary(name, data, shape, layout):
    op, elements = UNARY[name]
    check_grad(op, leaf(data.draw(arrays(shape, elements)), layout))


@pytest.mark.parametrize("name", ["log", "sqrt", "rsqrt"])
@FEW_EXAMPLES
@given(data=st.data(), shape=shapes())
def test_unary_near_zero_stays_accurate(name, data, shape):
    """The positive domain includes small values (the steep part), still away from 0."""
    op, _ = UNARY[name]
    x = leaf(data.draw(arrays(shape, positive(0.05, 0.5))))
    check_grad(op, x, eps=1e-8)


# ----------------------------------------------------------------------------- reductions


@st.composite
def reduce_args(draw, min_dims=0):
    """A shape and a `dim` argument: None, an int or a tuple of distinct dims."""
    shape = draw(shapes(min_dims=min_dims))
    ndim = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or ndim == 0:
        return shape, None
    if kind == "int":
        return shape, draw(dims_of(ndim))
    picked = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    negate = draw(st.booleans())
    return shape, tuple(d - ndim if negate else d for d in picked)


def _reduced_count(shape, dim) -> int:
    if dim is None:
        return int(np.prod(shape))
    dims = (dim,) if isinstance(dim, int) else dim
    return int(np.prod([shape[d] for d in dims])) if shape else 1


@pytest.mark.parametrize("name", ["sum", "mean", "amax_distinct", "logsumexp", "var", "std"])
@OP_SETTINGS
@given(data=st.data(), args=reduce_args(), keepdim=st.booleans(), layout=layouts())
def test_reductions(name, data, args, keepdim, layout):
    shape, dim = args
    distinct = name in ("amax_distinct", "std")
    array = data.draw(distinct_arrays(shape) if distinct else arrays(shape))
    x = leaf(array, layout)
    if name == "sum":
        check_grad(lambda t: t.sum(dim, keepdim=keepdim), x)
    elif name == "mean":
        check_grad(lambda t: t.mean(dim, keepdim=keepdim), x)
    elif name == "amax_distinct":
        check_grad(lambda t: mg.amax(t, dim, keepdim=keepdim), x)
    elif name == "logsumexp":
        check_grad(lambda t: t.logsumexp(dim if dim is not None else tuple(range(t.ndim)),
                                         keepdim=keepdim), x)
    else:
        count = _reduced_count(shape, dim)
        unbiased = data.draw(st.booleans()) and count > 1
        if name == "std" and count == 1:
            return  # std of one value is 0 (or nan): sqrt has no derivative there
        op = (lambda t: t.var(dim, unbiased=unbiased, keepdim=keepdim)) if name == "var" \
            else (lambda t: t.std(dim, unbiased=unbiased, keepdim=keepdim))
        check_grad(op, x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_sum_and_mean_free_functions(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(lambda t: mg.sum(t) * mg.mean(t), x)


@pytest.mark.parametrize("dim", [1, -1, (0, 2), (1, 2)])
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_sum_and_mean_over_inner_dims(dim, data, layout):
    """Reducing dims other than the leading ones, without keepdim: the gradient goes back
    along the reduced dims, not lined up with the trailing ones (the shapes and dims that
    test_reductions draws seldom tell the two apart)."""
    x = leaf(data.draw(arrays((2, 3, 4))), layout)
    check_grad(lambda t: t.sum(dim), x)
    check_grad(lambda t: t.mean(dim), x)


@pytest.mark.parametrize("smallest", [False, True])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), keepdim=st.booleans(), layout=layouts())
def test_max_min_distinct(smallest, data, shape, keepdim, layout):
    """max/min over everything and (values, indices) along a dim, values all distinct."""
    x = leaf(data.draw(distinct_arrays(shape)), layout)
    reduce = (lambda t, *a, **k: t.min(*a, **k)) if smallest else \
        (lambda t, *a, **k: t.max(*a, **k))
    check_grad(lambda t: reduce(t), x)
    if x.ndim > 0:
        dim = data.draw(dims_of(x.ndim))
        check_grad(lambda t: reduce(t, dim, keepdim=keepdim).values, x)


def test_max_ties_follow_pytorch():
    """Full max/min and amax share the gradient evenly among tied maxima; max along a dim
    sends it to the index it returns (the first maximum), as in PyTorch."""
    values = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    x = make_tensor(values, requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])

    x.grad = None
    mg.amax(x, 1).backward(make_tensor(np.array([10.0, 20.0])))
    np.testing.assert_allclose(x.grad.numpy(), [[0, 5, 5], [10, 10, 0]])

    x.grad = None
    result = x.max(1)
    np.testing.assert_array_equal(result.indices.numpy(), [1, 0])
    result.values.backward(make_tensor(np.array([10.0, 20.0])))
    np.testing.assert_allclose(x.grad.numpy(), [[0, 10, 0], [20, 0, 0]])

    x.grad = None
    result = x.min(1)
    result.values.backward(make_tensor(np.array([10.0, 20.0])))
    np.testing.assert_array_equal(result.indices.numpy(), [0, 2])
    np.testing.assert_allclose(x.grad.numpy(), [[10, 0, 0], [0, 0, 20]])


def test_maximum_minimum_ties_split_evenly():
    a = make_tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    b = make_tensor(np.array([1.0, 5.0, 0.0]), requires_grad=True)
    mg.maximum(a, b).backward(make_tensor(np.array([2.0, 4.0, 6.0])))
    np.testing.assert_allclose(a.grad.numpy(), [1, 0, 6])
    np.testing.assert_allclose(b.grad.numpy(), [1, 4, 0])
    a.grad = b.grad = None
    mg.minimum(a, b).backward(make_tensor(np.array([2.0, 4.0, 6.0])))
    np.testing.assert_allclose(a.grad.numpy(), [1, 4, 0])
    np.testing.assert_allclose(b.grad.numpy(), [1, 0, 6])


# ----------------------------------------------------------------------------- selection


def _lattice(offset: float):
    """Elements k + offset + [0, 0.2] for integers k: with offsets 0 and 0.5, |a - b| >= 0.3
    for every pair, so maximum never meets a tie."""
    return st.tuples(st.integers(-3, 3), floats(0.0, 0.2)).map(lambda p: p[0] + offset + p[1])


@pytest.mark.parametrize("layout", layout_cases())
@pytest.mark.parametrize("name", ["maximum", "minimum"])
@PER_LAYOUT
@given(data=st.data(), shapes_=broadcastable_shapes())
def test_maximum_minimum_broadcast(name, layout, data, shapes_):
    (a, b), view = draw_operands(data, shapes_, layout, [_lattice(0.0), _lattice(0.5)])
    op = getattr(mg, name)
    check_grad(lambda x, y: op(*view([x, y])), a, b)
    if name == "maximum":
        check_grad(lambda x, y: x.maximum(y), a, b)


@pytest.mark.parametrize("layout", layout_cases())
@PER_LAYOUT
@given(data=st.data(), shapes_=broadcastable_shapes(num_shapes=3))
def test_where_broadcast(layout, data, shapes_):
    shape_c, shape_a, shape_b = shapes_
    condition = make_tensor(data.draw(hnp.arrays(np.bool_, shape_c)))
    (a, b), view = draw_operands(data, [shape_a, shape_b], layout)
    check_grad(lambda x, y: mg.where(condition, *view([x, y])), a, b)
    check_grad(lambda x: mg.where(condition, x, 2.0), a)


@OP_SETTINGS
@given(data=st.data(), shapes_=broadcastable_shapes(), layout=layouts())
def test_masked_fill_broadcast_mask(data, shapes_, layout):
    """The mask broadcasts to x; filled positions get no gradient."""
    mask_shape = shapes_[1]
    x = leaf(data.draw(arrays(np.broadcast_shapes(*shapes_))), layout)
    mask = make_tensor(data.draw(hnp.arrays(np.bool_, mask_shape)))
    check_grad(lambda t: t.masked_fill(mask, -1.5), x)
    check_grad(lambda t: mg.masked_fill(t, mask, float("-inf")).exp(), x)


@pytest.mark.parametrize("upper", [True, False])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=2, max_dims=3, max_side=4),
       diagonal=st.integers(-2, 2), layout=layouts())
def test_triu_tril(upper, data, shape, diagonal, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    op = mg.triu if upper else mg.tril
    check_grad(lambda t: op(t, diagonal), x)


# ----------------------------------------------------------------------------- shape


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1, max_dims=4), layout=layouts())
def test_permute_transpose_T(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    order = data.draw(st.permutations(range(x.ndim)))
    dim0, dim1 = data.draw(dims_of(x.ndim)), data.draw(dims_of(x.ndim))
    check_grad(lambda t: t.permute(*order), x)
    check_grad(lambda t: mg.permute(t, order), x)
    check_grad(lambda t: t.transpose(dim0, dim1), x)
    check_grad(lambda t: mg.transpose(t, dim0, dim1), x)
    check_grad(lambda t: t.T, x)


@st.composite
def cat_args(draw):
    base = list(draw(shapes(min_dims=1)))
    ndim = len(base)
    dim = draw(dims_of(ndim))
    count = draw(st.integers(1, 3))
    result = []
    for _ in range(count):
        shape = list(base)
        shape[dim % ndim] = draw(st.integers(1, 3))
        result.append(tuple(shape))
    return result, dim


@pytest.mark.parametrize("layout", layout_cases())
@PER_LAYOUT
@given(data=st.data(), args=cat_args())
def test_cat(layout, data, args):
    shape_list, dim = args
    tensors, view = draw_operands(data, shape_list, layout)
    check_grad(lambda *ts: mg.cat(tuple(view(ts)), dim), *tensors)
    check_grad(lambda *ts: mg.cat(view(ts), dim=dim), *tensors)  # a list, dim by name
