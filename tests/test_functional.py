"""Gradient checks of every nn.functional op on hypothesis-drawn float64 inputs from the
op's domain: full Jacobians against finite differences (gradcheck) and, where cheap,
second derivatives with random upstream gradients (gradgradcheck). Tensors are made on
MINIGRAD_TEST_DEVICE (see conftest.py)."""
import numpy as np
import pytest
from helpers import layouts, make_tensor, test_device
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.device
DEVICE = test_device()
checks = settings(max_examples=6, deadline=None)
seeds = st.integers(0, 2**16)
small = st.integers(1, 3)


def _tensor(data, **kwargs) -> mg.Tensor:
    return mg.tensor(data, device=DEVICE, **kwargs)


def _leaf(rng, *shape, scale=1.0, layout="contiguous"):
    """A float64 leaf of normal values; layout as in helpers.make_tensor."""
    return make_tensor(rng.standard_normal(shape) * scale, requires_grad=True, layout=layout)


def _away_from_zero(rng, *shape):
    """Values with |x| in [0.1, 2]: relu's kink at 0 is outside the finite differences."""
    magnitude = rng.uniform(0.1, 2.0, shape)
    sign = rng.choice([-1.0, 1.0], shape)
    return _tensor(magnitude * sign, dtype=mg.float64, requires_grad=True)


@pytest.mark.parametrize("with_bias", [True, False])
@checks
@given(seeds, small, small, st.sampled_from([(), (2,)]), layouts(), layouts())
def test_linear(with_bias, seed, rows, features, leading, x_layout, w_layout):
    rng = np.random.default_rng(seed)
    x_shape = leading + (rows, features) if rows > 1 else (features,)
    x, w = _leaf(rng, *x_shape, layout=x_layout), _leaf(rng, 2, features, layout=w_layout)
    b = _leaf(rng, 2) if with_bias else None
    inputs = (x, w) if b is None else (x, w, b)
    assert gradcheck(lambda *a: F.linear(*a), inputs)
    assert gradgradcheck(lambda *a: F.linear(*a), inputs)


@checks
@given(seeds, small, small)
def test_relu(seed, rows, cols):
    x = _away_from_zero(np.random.default_rng(seed), rows, cols)
    assert gradcheck(F.relu, (x,))


@checks
@given(seeds, small, small, st.sampled_from(["none", "tanh"]))
def test_gelu(seed, rows, cols, approximate):
    x = _leaf(np.random.default_rng(seed), rows, cols, scale=2.0)
    assert gradcheck(lambda t: F.gelu(t, approximate), (x,))
    assert gradgradcheck(lambda t: F.gelu(t, approximate), (x,))


@checks
@given(seeds, small, st.integers(2, 4), st.sampled_from([0, 1, -1]))
def test_softmax_and_log_softmax(seed, rows, cols, dim):
    x = _leaf(np.random.default_rng(seed), rows, cols, scale=2.0)
    for op in (F.softmax, F.log_softmax):
        assert gradcheck(lambda t, op=op: op(t, dim), (x,))
        assert gradgradcheck(lambda t, op=op: op(t, dim), (x,))


@checks
@given(seeds, small, st.integers(2, 4), st.sampled_from([0.0, 0.3, 0.7]))
def test_dropout(seed, rows, cols, p):
    x = _leaf(np.random.default_rng(seed), rows, cols)

    def fixed_mask_dropout(t):
        mg.manual_seed(seed)  # the same mask on every call of the finite differences
        return F.dropout(t, p, training=True)

    assert gradcheck(fixed_mask_dropout, (x,))


@checks
@given(seeds, small, st.integers(2, 4), st.integers(1, 2), st.booleans(), layouts())
def test_layer_norm(seed, rows, width, trailing, affine, layout):
    rng = np.random.default_rng(seed)
    normalized = (width,) * trailing
    x = _leaf(rng, rows, *normalized, scale=2.0, layout=layout)
    params = (_leaf(rng, *normalized), _leaf(rng, *normalized)) if affine else ()

    def layer_norm(t, *weight_bias):
        return F.layer_norm(t, normalized, *weight_bias, eps=1e-5)

    assert gradcheck(layer_norm, (x, *params), atol=1e-5)
    assert gradgradcheck(layer_norm, (x, *params), atol=1e-4)


@checks
@given(seeds, st.integers(2, 5))
def test_embedding(seed, vocabulary):
    rng = np.random.default_rng(seed)
    weight = _leaf(rng, vocabulary, 3)
    ids = _tensor(rng.integers(0, vocabulary, size=(2, 3)))
    assert gradcheck(lambda w: F.embedding(ids, w), (weight,))
    assert gradgradcheck(lambda w: F.embedding(ids, w), (weight,))


def test_embedding_padding_row_gets_no_gradient():
    """padding_idx breaks finite differences on purpose: its row's gradient is 0 while
    the output depends on it. Every other row gets the ordinary gradient."""
    rng = np.random.default_rng(0)
    weight = _leaf(rng, 4, 3)
    ids = _tensor([[0, 2, 2], [3, 0, 2]])
    upstream = _tensor(rng.standard_normal((2, 3, 3)), dtype=mg.float64)
    F.embedding(ids, weight).backward(upstream)
    expected = weight.grad.numpy().copy()
    expected[2] = 0
    weight.grad = None
    F.embedding(ids, weight, padding_idx=2).backward(upstream)
    np.testing.assert_array_equal(weight.grad.numpy(), expected)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@checks
@given(seeds, st.integers(1, 4), st.integers(2, 4), st.sampled_from([0.0, 0.2]), st.booleans(),
       st.booleans())
def test_cross_entropy(reduction, seed, rows, classes, smoothing, weighted, spatial):
    rng = np.random.default_rng(seed)
    shape = (rows, classes, 2) if spatial else (rows, classes)
    x = _leaf(rng, *shape, scale=2.0)
    target_shape = (rows, 2) if spatial else (rows,)
    target = rng.integers(0, classes, size=target_shape)
    target.reshape(-1)[-1] = -100  # one ignored position (rows=1, not spatial: all ignored)
    target = _tensor(target)
    weight = _tensor(rng.uniform(0.5, 2.0, classes), dtype=mg.float64) if weighted else None

    def loss(t):
        return F.cross_entropy(t, target, weight, reduction=reduction,
                               label_smoothing=smoothing)

    if reduction == "mean" and target.numpy().max() < 0:
        return  # all ignored: NaN loss, checked in test_nn
    assert gradcheck(loss, (x,))
    assert gradgradcheck(loss, (x,))


@checks
@given(seeds, st.integers(1, 4), st.integers(2, 4), st.sampled_from(["mean", "sum", "none"]))
def test_nll_loss(seed, rows, classes, reduction):
    rng = np.random.default_rng(seed)
    logp = _leaf(rng, rows, classes)
    target = _tensor(rng.integers(0, classes, size=rows))
    assert gradcheck(lambda t: F.nll_loss(t, target, reduction=reduction), (logp,))


@checks
@given(seeds, small, small, st.sampled_from(["mean", "sum", "none"]))
def test_mse_loss(seed, rows, cols, reduction):
    rng = np.random.default_rng(seed)
    a, b = _leaf(rng, rows, cols), _leaf(rng, rows, cols)
    assert gradcheck(lambda x, y: F.mse_loss(x, y, reduction=reduction), (a, b))
    assert gradgradcheck(lambda x, y: F.mse_loss(x, y, reduction=reduction), (a, b))


@checks
@given(seeds, st.integers(1, 3), st.integers(1, 3), st.sampled_from(["none", "bool", "float",
                                                                     "causal"]), layouts())
def test_scaled_dot_product_attention(seed, queries, keys, mask_kind, layout):
    rng = np.random.default_rng(seed)
    q, k = _leaf(rng, 2, queries, 3, layout=layout), _leaf(rng, 2, keys, 3, layout=layout)
    v = _leaf(rng, 2, keys, 2)
    mask = None
    if mask_kind == "bool":
        mask = _tensor(rng.random((queries, keys)) > 0.4)  # rows may be fully masked
    elif mask_kind == "float":
        mask = _tensor(rng.standard_normal((queries, keys)), dtype=mg.float64)

    def attend(*qkv):
        return F.scaled_dot_product_attention(*qkv, attn_mask=mask,
                                              is_causal=mask_kind == "causal")

    assert gradcheck(attend, (q, k, v))
    assert gradgradcheck(attend, (q, k, v), atol=1e-4)


def test_fully_masked_attention_row_is_zero_in_forward_and_backward():
    rng = np.random.default_rng(0)
    q, k, v = _leaf(rng, 3, 4), _leaf(rng, 5, 4), _leaf(rng, 5, 2)
    allowed = np.ones((3, 5), dtype=bool)
    allowed[1] = False
    out, weights = F.attention(q, k, v, _tensor(allowed))
    assert np.all(out.numpy()[1] == 0) and np.all(weights.numpy()[1] == 0)
    out.backward(_tensor(rng.standard_normal(out.shape), dtype=mg.float64))
    for t in (q, k, v):
        assert np.all(np.isfinite(t.grad.numpy()))
    assert np.all(q.grad.numpy()[1] == 0)


def test_attention_returns_weights_that_sum_to_one():
    rng = np.random.default_rng(1)
    q, k, v = _leaf(rng, 2, 3, 4), _leaf(rng, 2, 3, 4), _leaf(rng, 2, 3, 4)
    out, weights = F.attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(weights.numpy().sum(-1), 1.0)
    assert np.all(np.triu(weights.numpy()[0], 1) == 0)
    np.testing.assert_allclose(out.numpy(), weights.numpy() @ v.numpy())


def test_dropout_scales_survivors_and_is_identity_in_eval():
    mg.manual_seed(0)
    x = mg.ones(1000, device=DEVICE)
    out = F.dropout(x, 0.25).numpy()
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((out == 0).mean() - 0.25) < 0.06
    assert F.dropout(x, 0.25, training=False) is x


@pytest.mark.parametrize("bad", [
    lambda: F.cross_entropy(mg.randn(3, 4, device=DEVICE), _tensor([0, 1])),
    lambda: F.cross_entropy(mg.randn(3, 4, device=DEVICE), _tensor([0, 1, 7])),
    lambda: F.cross_entropy(mg.randn(3, 4, device=DEVICE), _tensor([0, 1, 2]),
                            reduction="avg"),
    lambda: F.embedding(_tensor([5]), mg.randn(3, 2, device=DEVICE)),
    lambda: F.layer_norm(mg.randn(3, 4, device=DEVICE), (3,)),
    lambda: F.scaled_dot_product_attention(mg.randn(2, 3, device=DEVICE),
                                           mg.randn(2, 4, device=DEVICE),
                                           mg.randn(2, 4, device=DEVICE)),
])
def test_misuse_raises_clear_errors(bad):
    with pytest.raises((RuntimeError, ValueError, IndexError, TypeError)):
        bad()
