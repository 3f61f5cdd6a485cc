"""Activations, their modules and F.normalize against PyTorch: forward and backward with a
random upstream gradient in float64 (and float32 forward), on hypothesis-drawn inputs
that include large magnitudes. Skipped without torch."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, arrays, floats, make_tensor, shapes
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = pytest.mark.device

# name -> function of (functional module, nn module, tensor); both libraries share names
CASES = {
    "silu": lambda L, N, x: L.silu(x),
    "mish": lambda L, N, x: L.mish(x),
    "logsigmoid": lambda L, N, x: L.logsigmoid(x),
    "softplus": lambda L, N, x: L.softplus(x),
    "softplus_beta_threshold": lambda L, N, x: L.softplus(x, beta=0.5, threshold=2.0),
    "leaky_relu": lambda L, N, x: L.leaky_relu(x),
    "leaky_relu_slope": lambda L, N, x: L.leaky_relu(x, 0.25),
    "elu": lambda L, N, x: L.elu(x),
    "elu_alpha": lambda L, N, x: L.elu(x, alpha=1.7),
    "tanh_module": lambda L, N, x: N.Tanh()(x),
    "sigmoid_module": lambda L, N, x: N.Sigmoid()(x),
    "silu_module": lambda L, N, x: N.SiLU()(x),
    "leaky_relu_module": lambda L, N, x: N.LeakyReLU(0.1)(x),
    "elu_module": lambda L, N, x: N.ELU(0.5)(x),
    "mish_module": lambda L, N, x: N.Mish()(x),
    "softplus_module": lambda L, N, x: N.Softplus(beta=2.0, threshold=5.0)(x),
    "log_sigmoid_module": lambda L, N, x: N.LogSigmoid()(x),
    "relu_module_inplace": lambda L, N, x: N.ReLU(inplace=True)(x * 1),
    "identity": lambda L, N, x: N.Identity()(x) * 2,
    "softmax_module": lambda L, N, x: N.Softmax(dim=-1)(x),
    "log_softmax_module": lambda L, N, x: N.LogSoftmax(dim=0)(x),
    "normalize": lambda L, N, x: L.normalize(x, dim=-1),
    "normalize_p1_dim0": lambda L, N, x: L.normalize(x, p=1, dim=0),
    "normalize_p3": lambda L, N, x: L.normalize(x, p=3.0, dim=-1),
    "normalize_inf": lambda L, N, x: L.normalize(x, p=math.inf, dim=-1),
}
# values from -60 to 60 with a few exact zeros: the kinks (ties go the same way in both)
values = st.one_of(floats(-60.0, 60.0), floats(-3.0, 3.0), st.just(0.0))
# normalize: no magnitudes so small that |x|^p underflows to 0 while x does not (PyTorch's
# gradient is NaN there), nor rounding noise of 1/norm above the absolute tolerance
norm_values = st.one_of(floats(-60.0, -0.01), floats(0.01, 60.0), st.just(0.0))


@pytest.mark.parametrize("name", list(CASES))
@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=1))
def test_forward_and_backward_match_torch(name, data, shape):
    func = CASES[name]
    array = data.draw(arrays(shape, norm_values if name.startswith("normalize") else values))
    x = make_tensor(array, requires_grad=True)
    x_t = torch.tensor(array, requires_grad=True)
    out, out_t = func(F, nn, x), func(TF, torch.nn, x_t)
    assert tuple(out.shape) == tuple(out_t.shape)
    np.testing.assert_allclose(out.numpy(), out_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    upstream = np.random.default_rng(0).standard_normal(tuple(out.shape))
    out.backward(make_tensor(upstream))
    out_t.backward(torch.tensor(upstream))
    np.testing.assert_allclose(x.grad.numpy(), x_t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["silu", "mish", "logsigmoid", "softplus", "elu",
                                  "leaky_relu", "normalize"])
def test_float32_forward_matches_torch(name):
    array = np.random.default_rng(1).normal(0, 10, (4, 8)).astype(np.float32)
    out = CASES[name](F, nn, make_tensor(array))
    out_t = CASES[name](TF, torch.nn, torch.tensor(array))
    assert out.dtype is mg.float32
    np.testing.assert_allclose(out.numpy(), out_t.numpy(), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["silu", "mish", "softplus_beta_threshold", "elu_alpha",
                                  "normalize", "normalize_p3"])
def test_second_derivatives_match_torch(name):
    array = np.random.default_rng(2).normal(0, 2, (3, 4))
    x, x_t = make_tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    (g,) = mg.autograd.grad(CASES[name](F, nn, x).sum(), [x], create_graph=True)
    (g_t,) = torch.autograd.grad(CASES[name](TF, torch.nn, x_t).sum(), [x_t],
                                 create_graph=True)
    (g * g).sum().backward()
    (g_t * g_t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x_t.grad.numpy(), rtol=1e-9, atol=1e-12)
