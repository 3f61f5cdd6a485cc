"""Second derivatives: gradgradcheck (create_graph=True through every backward rule) for
the core ops, and a Hessian-vector product on a small tanh MLP against finite
differences of gradients."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    FEW_EXAMPLES,
    arrays,
    distinct_arrays,
    floats,
    layouts,
    make_tensor,
    nonzero,
    positive,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import leaf

import minigrad as mg

pytestmark = pytest.mark.device


# name -> (function, list of (shape, element strategy) for its inputs)
CORE = {
    "mul": (lambda a, b: a * b, [((2, 3), floats()), ((3,), floats())]),
    "div": (lambda a, b: a / b, [((2, 3), floats()), ((2, 1), positive(0.5, 2.0))]),
    "matmul": (lambda a, b: a @ b, [((2, 2, 3), floats()), ((3, 2), floats())]),
    "matmul_vector": (lambda a, b: a @ b, [((3,), floats()), ((2, 3, 2), floats())]),
    "matmul_matrix_vector": (lambda a, b: a @ b, [((2, 2, 3), floats()), ((3,), floats())]),
    "matmul_dot": (lambda a, b: a @ b, [((3,), floats()), ((3,), floats())]),
    "exp": (lambda a: a.exp(), [((2, 3), floats(-2.0, 2.0))]),
    "log": (lambda a: a.log(), [((2, 3), positive(0.5, 3.0))]),
    "sqrt": (lambda a: a.sqrt(), [((2, 3), positive(0.5, 3.0))]),
    "rsqrt": (lambda a: a.rsqrt(), [((2, 3), positive(0.5, 3.0))]),
    "tanh": (lambda a: a.tanh(), [((2, 3), floats())]),
    "sigmoid": (lambda a: a.sigmoid(), [((2, 3), floats())]),
    "gelu": (lambda a: a.gelu(), [((2, 3), floats())]),
    "gelu_tanh": (lambda a: a.gelu(approximate="tanh"), [((2, 3), floats())]),
    "erf": (lambda a: mg.erf(a), [((2, 3), floats(-2.0, 2.0))]),
    "softmax": (lambda a: a.softmax(-1), [((2, 3), floats())]),
    "softmax_dim0": (lambda a: a.softmax(0), [((2, 3), floats())]),
    "log_softmax": (lambda a: a.log_softmax(-1), [((2, 3), floats())]),
    "log_softmax_dim0": (lambda a: a.log_softmax(0), [((3, 2), floats())]),
    "sum": (lambda a: (a * a).sum(1), [((2, 3), floats())]),
    "mean": (lambda a: (a * a).mean(0, keepdim=True), [((2, 3), floats())]),
    "var": (lambda a: a.var(1), [((2, 3), floats())]),
    "std": (lambda a: a.std(0, unbiased=False), [((3, 2), "distinct")]),  # std > 0
    "logsumexp": (lambda a: a.logsumexp(1), [((2, 3), floats())]),
    "pow_scalar": (lambda a: a**3, [((2, 3), floats())]),
    "pow_fractional": (lambda a: a**-1.5, [((2, 3), positive(0.5, 3.0))]),
    "pow_tensor": (lambda a, b: a**b, [((2, 3), positive(0.5, 3.0)), ((3,), floats(-2, 2))]),
    "getitem_repeats": (lambda a: a[[0, 0, 1], ::-1] ** 2, [((2, 3), floats())]),
    "getitem_slices": (lambda a: (a[None, ..., 1:] * a[:, :2]).exp(), [((2, 3), floats(-1, 1))]),
    "where": (lambda a, b: mg.where(a > 0, a * a, b * a), [((2, 3), nonzero()), ((3,), floats())]),
    "cat_permute": (lambda a, b: mg.cat([a, b], 1).permute(1, 0) ** 2,
                    [((2, 3), floats()), ((2, 1), floats())]),
    "broadcast_expand": (lambda a: a.expand(2, 3) * a.reshape(3, 1).expand(3, 3)[:2],
                         [((1, 3), floats())]),
}


@pytest.mark.parametrize("name", list(CORE))
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_gradgradcheck(name, data, layout):
    func, specs = CORE[name]
    inputs = [
        leaf(data.draw(distinct_arrays(shape) if elements == "distinct" else
                       arrays(shape, elements)), layout)
        for shape, elements in specs
    ]
    assert mg.autograd.gradgradcheck(func, inputs)


@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_gradgradcheck_softmax_random_shape(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert mg.autograd.gradgradcheck(lambda t: t.softmax(dim), (x,))
    assert mg.autograd.gradgradcheck(lambda t: t.log_softmax(dim), (x,))


def _mlp_loss(params, inputs, targets):
    w1, b1, w2, b2 = params
    hidden = (inputs @ w1 + b1).tanh()
    out = hidden @ w2 + b2
    return ((out - targets) ** 2).mean() + (w1 * w1).sum() * 0.01


def test_hessian_vector_product_matches_finite_differences_of_gradients():
    rng = np.random.default_rng(7)
    shapes_ = [(3, 4), (4,), (4, 2), (2,)]
    values = [rng.standard_normal(s) for s in shapes_]
    direction = [rng.standard_normal(s) for s in shapes_]
    inputs = make_tensor(rng.standard_normal((5, 3)))
    targets = make_tensor(rng.standard_normal((5, 2)))

    params = [leaf(v) for v in values]
    grads = mg.autograd.grad(_mlp_loss(params, inputs, targets), params, create_graph=True)
    assert all(g.requires_grad for g in grads)
    dot = sum((g * make_tensor(v)).sum() for g, v in zip(grads, direction))
    hvp = mg.autograd.grad(dot, params)

    def gradient_at(step: float):
        shifted = [leaf(v + step * d) for v, d in zip(values, direction)]
        loss = _mlp_loss(shifted, inputs, targets)
        return [g.numpy() for g in mg.autograd.grad(loss, shifted)]

    eps = 1e-5
    plus, minus = gradient_at(eps), gradient_at(-eps)
    for computed, p, m in zip(hvp, plus, minus):
        np.testing.assert_allclose(computed.numpy(), (p - m) / (2 * eps), rtol=1e-6, atol=1e-8)

    # the same product through backward(create_graph=True) and .grad
    params = [leaf(v) for v in values]
    _mlp_loss(params, inputs, targets).backward(create_graph=True)
    first = [p.grad for p in params]
    for p in params:
        p.grad = None
    sum((g * make_tensor(v)).sum() for g, v in zip(first, direction)).backward()
    for p, expected in zip(params, hvp):
        np.testing.assert_allclose(p.grad.numpy(), expected.numpy(), rtol=1e-12, atol=1e-14)


def test_third_derivative_of_tanh():
    x = leaf(np.array([0.3, -1.2]))
    (g1,) = mg.autograd.grad(x.tanh().sum(), [x], create_graph=True)
    (g2,) = mg.autograd.grad(g1.sum(), [x], create_graph=True)
    (g3,) = mg.autograd.grad(g2.sum(), [x])
    t = np.tanh(x.numpy())
    np.testing.assert_allclose(g3.numpy(), -2 * (1 - t**2) ** 2 + 4 * t**2 * (1 - t**2))
