"""Activations and F.normalize: hypothesis gradient checks in float64 (first and second
derivatives) drawn away from each function's kinks, stability at extreme inputs, the
activation modules (arguments, reprs, softmax's implicit dim), and F.normalize."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import (
    FEW_EXAMPLES,
    OP_SETTINGS,
    arrays,
    away_from,
    check_grad,
    dims_of,
    distinct_arrays,
    floats,
    layouts,
    make_tensor,
    nonzero,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import leaf

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from minigrad.autograd import gradgradcheck

pytestmark = pytest.mark.device


# name -> (function, element strategy: the function's smooth domain)
ACTIVATIONS = {
    "silu": (F.silu, floats(-6.0, 6.0)),
    "mish": (F.mish, floats(-6.0, 6.0)),
    "logsigmoid": (F.logsigmoid, floats(-6.0, 6.0)),
    "softplus": (F.softplus, floats(-6.0, 6.0)),
    "softplus_beta": (lambda t: F.softplus(t, beta=2.0, threshold=3.0),
                      away_from([1.5], 0.05)),  # beta * x = threshold: a jump of e^-3
    "leaky_relu": (F.leaky_relu, nonzero(0.1)),
    "leaky_relu_slope": (lambda t: F.leaky_relu(t, 0.3), nonzero(0.1)),
    "elu": (F.elu, nonzero(0.1)),
    "elu_alpha": (lambda t: F.elu(t, alpha=0.5), nonzero(0.1)),
    "tanh": (F.tanh, floats()),
    "sigmoid": (F.sigmoid, floats()),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_activation_gradients(name, data, shape, layout):
    func, elements = ACTIVATIONS[name]
    check_grad(func, leaf(data.draw(arrays(shape, elements)), layout))


@pytest.mark.parametrize("name", list(ACTIVATIONS))
@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=1))
def test_activation_second_derivatives(name, data, shape):
    func, elements = ACTIVATIONS[name]
    assert gradgradcheck(func, (leaf(data.draw(arrays(shape, elements))),), atol=1e-4)


@pytest.mark.parametrize("name", ["softplus", "logsigmoid", "silu", "mish", "elu",
                                  "leaky_relu"])
@pytest.mark.parametrize("dtype", [mg.float32, mg.float64])
def test_activations_stay_finite_at_extreme_inputs(name, dtype):
    func = ACTIVATIONS[name][0]
    x = make_tensor([-1e4, -100.0, -30.0, 0.0, 30.0, 100.0, 1e4], dtype=dtype)
    x.requires_grad_()
    out = func(x)
    assert out.dtype is dtype
    out.sum().backward()
    assert np.all(np.isfinite(out.numpy())) and np.all(np.isfinite(x.grad.numpy()))


def test_softplus_and_its_threshold():
    x = make_tensor([-50.0, 0.0, 10.0, 20.0, 20.5, 700.0], dtype=mg.float64)
    expected = np.log1p(np.exp(np.minimum(x.numpy(), 30)))
    expected[-2:] = x.numpy()[-2:]  # linear above the threshold
    np.testing.assert_allclose(F.softplus(x).numpy(), expected, rtol=1e-15)
    np.testing.assert_allclose(F.softplus(x, beta=2).numpy()[:4],
                               np.log1p(np.exp(2 * x.numpy()[:4])) / 2, rtol=1e-15)


def test_leaky_relu_and_elu_values():
    x = make_tensor([-2.0, 0.0, 3.0])
    np.testing.assert_allclose(F.leaky_relu(x, 0.2).numpy(), [-0.4, 0.0, 3.0])
    np.testing.assert_allclose(F.elu(x, 2.0).numpy(), [2 * (math.exp(-2) - 1), 0.0, 3.0],
                               rtol=1e-6)
    assert F.leaky_relu(mg.tensor([-1, 2])).dtype is mg.float32  # integers become floats


# ----------------------------------------------------------------------------- modules


def test_activation_modules_call_their_functions():
    x = make_tensor(np.linspace(-3, 3, 12).reshape(3, 4))
    pairs = [
        (nn.ReLU(inplace=True), F.relu(x)), (nn.Tanh(), x.tanh()), (nn.Sigmoid(), x.sigmoid()),
        (nn.SiLU(), F.silu(x)), (nn.LeakyReLU(0.2), F.leaky_relu(x, 0.2)),
        (nn.ELU(alpha=0.5), F.elu(x, 0.5)), (nn.Mish(), F.mish(x)),
        (nn.Softplus(beta=2, threshold=1), F.softplus(x, 2, 1)),
        (nn.LogSigmoid(), F.logsigmoid(x)), (nn.Identity(7, some="argument"), x),
        (nn.Softmax(dim=0), x.softmax(0)), (nn.LogSoftmax(dim=1), x.log_softmax(1)),
        (nn.GELU("tanh"), F.gelu(x, "tanh")),
    ]
    for module, expected in pairs:
        np.testing.assert_array_equal(module(x).numpy(), expected.numpy())
    assert nn.Identity()(x) is x


def test_inplace_leaves_the_input_unchanged():
    x = make_tensor([-1.0, 2.0])
    out = nn.ReLU(inplace=True)(x)
    np.testing.assert_array_equal(out.numpy(), [0.0, 2.0])
    np.testing.assert_array_equal(x.numpy(), [-1.0, 2.0])


def test_activation_reprs_are_pytorchs():
    assert [repr(m) for m in (
        nn.ReLU(), nn.ReLU(inplace=True), nn.LeakyReLU(), nn.LeakyReLU(0.2, inplace=True),
        nn.ELU(), nn.SiLU(), nn.Mish(), nn.Softplus(), nn.Softmax(1), nn.LogSoftmax(),
        nn.GELU(), nn.Tanh(), nn.Identity(),
    )] == [
        "ReLU()", "ReLU(inplace=True)", "LeakyReLU(negative_slope=0.01)",
        "LeakyReLU(negative_slope=0.2, inplace=True)", "ELU(alpha=1.0)", "SiLU()", "Mish()",
        "Softplus(beta=1.0, threshold=20.0)", "Softmax(dim=1)", "LogSoftmax(dim=None)",
        "GELU(approximate='none')", "Tanh()", "Identity()",
    ]


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_softmax_any_dim(name, data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    dim = data.draw(dims_of(len(shape)))
    method = getattr(mg.Tensor, name)
    free = getattr(mg, name)
    # softmax rows sum to 1: only a random upstream gradient sees its Jacobian
    check_grad(lambda t: method(t, dim), x)
    check_grad(lambda t: free(t, dim), x)


@pytest.mark.parametrize("ndim, implicit", [(1, 0), (2, 1), (3, 0), (4, 1)])
def test_softmax_without_dim_picks_pytorchs_legacy_dim_and_warns(ndim, implicit):
    x = make_tensor(np.random.default_rng(0).standard_normal((2,) * ndim))
    with pytest.warns(UserWarning, match=f"chose dim={implicit}"):
        out = nn.Softmax()(x)
    np.testing.assert_array_equal(out.numpy(), x.softmax(implicit).numpy())
    with pytest.warns(UserWarning, match="log_softmax: implicit dimension"):
        F.log_softmax(x)


# ----------------------------------------------------------------------------- normalize


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 0.5, math.inf])
@FEW_EXAMPLES
@given(data=st.data(), dim=st.sampled_from([0, 1, -1, (0, 1)]))
def test_normalize_gradients(p, data, dim):
    # magnitudes distinct and away from 0: |x| has a kink at 0, the inf-norm one where two
    # largest magnitudes tie
    ranks = np.argsort(np.argsort(data.draw(distinct_arrays((12,))))).reshape(3, 4)
    signs = data.draw(arrays((3, 4), st.sampled_from([-1.0, 1.0])))
    x = leaf(signs * (0.3 + 0.15 * ranks))
    check_grad(lambda t: F.normalize(t, p, dim), x)
    assert gradgradcheck(lambda t: F.normalize(t, p, dim), (x,), atol=1e-4)


def test_normalize_gives_unit_norms_and_keeps_zero_slices_zero():
    x = make_tensor([[3.0, -4.0], [0.0, 0.0], [1e-14, 0.0]], dtype=mg.float64)
    x.requires_grad_()
    out = F.normalize(x, dim=1)
    np.testing.assert_allclose(out.numpy(), [[0.6, -0.8], [0.0, 0.0], [0.01, 0.0]])
    out.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    np.testing.assert_allclose(F.normalize(x, p=math.inf, dim=0).numpy()[:, 0],
                               [1.0, 0.0, 1e-14 / 3.0])


def test_normalize_rejects_bad_arguments():
    with pytest.raises(ValueError, match="normalize: p must be a positive number or inf"):
        F.normalize(mg.ones(2, 2), p=0)
    with pytest.raises(IndexError, match="normalize: dimension 2 is out of range"):
        F.normalize(mg.ones(2, 2), dim=2)
    with pytest.raises(TypeError, match="normalize: expected a floating-point tensor"):
        F.normalize(mg.tensor([1, 2]), dim=0)
