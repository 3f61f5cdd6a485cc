"""Forward values of minigrad.nn.functional's activations, linear, normalize, one_hot,
embedding and pad against NumPy formulas written from each function's definition, and
dropout's draws against its statistics. No PyTorch needed (see numpy_oracle)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import OP_SETTINGS, layouts
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_oracle import (
    assert_forward,
    erf,
    generic_arrays,
    generic_shapes,
    ids,
    log_softmax,
    sigmoid,
    softmax,
    tensor,
)

import minigrad as mg
import minigrad.nn.functional as F


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + e^(beta x)) / beta, and x itself where beta x > threshold."""
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


pytestmark = pytest.mark.device

# name: (keyword arguments, NumPy formula); drawn inputs lie in [-30, 30]
ACTIVATIONS = {
    "relu": ({}, lambda x: np.where(x > 0, x, 0.0)),
    "elu": ({"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * (np.exp(x) - 1))),
    "leaky_relu": ({"negative_slope": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x)),
    "logsigmoid": ({}, lambda x: -np.log1p(np.exp(-x))),
    "sigmoid": ({}, sigmoid),
    "tanh": ({}, np.tanh),
    "silu": ({}, lambda x: x * sigmoid(x)),
    "mish": ({}, lambda x: x * np.tanh(softplus(x))),
    "softplus": ({"beta": 2.0, "threshold": 15.0}, lambda x: softplus(x, 2.0, 15.0)),
    "gelu": ({}, lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2)))),
    "gelu_tanh": ({"approximate": "tanh"}, lambda x: 0.5 * x * (
        1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))),
}


@pytest.mark.parametrize("case", list(ACTIVATIONS))
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_activation(case, data, shape, layout):
    kwargs, formula = ACTIVATIONS[case]
    name = case.removesuffix("_tanh")
    x = data.draw(generic_arrays(shape, -30.0, 30.0))
    assert_forward(getattr(F, name)(tensor(x, layout), **kwargs), formula(x))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_softmax_dim_and_dtype(name, data, shape, layout):
    """dtype= casts the input first: a float32 input gives float64 values of the float32
    numbers."""
    x = data.draw(generic_arrays(shape, -8.0, 8.0))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    formula = softmax if name == "softmax" else log_softmax
    function = getattr(F, name)
    assert_forward(function(tensor(x, layout), dim=dim), formula(x, dim))
    single = tensor(x, layout, dtype=mg.float32)
    assert_forward(function(single, dim=dim, dtype=mg.float64),
                   formula(x.astype(np.float32).astype(np.float64), dim))


@OP_SETTINGS
@given(data=st.data(), sizes=st.tuples(*[st.integers(2, 4)] * 3), layout=layouts(),
       use_bias=st.booleans())
def test_linear(data, sizes, layout, use_bias):
    """out[..., o] = sum_i x[..., i] w[o, i] + b[o]."""
    batch, n_in, n_out = sizes
    x = data.draw(generic_arrays((batch, 2, n_in)))
    w = data.draw(generic_arrays((n_out, n_in)))
    b = data.draw(generic_arrays((n_out,)))
    expected = (x[..., None, :] * w).sum(axis=-1) + (b if use_bias else 0.0)
    got = F.linear(tensor(x, layout), tensor(w, layout), tensor(b) if use_bias else None)
    assert_forward(got, expected)


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(min_dims=2), layout=layouts(),
       p=st.sampled_from([1.0, 2.0, 3.0, math.inf]))
def test_normalize(data, shape, layout, p):
    """x / max(||x||_p, eps) along dim; an all-zero slice stays zero."""
    x = data.draw(generic_arrays(shape))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    zeroed = x.copy()
    np.moveaxis(zeroed, dim, -1)[(0,) * (len(shape) - 1)] = 0.0  # one slice along dim
    magnitude = np.abs(zeroed)
    norm = magnitude.max(axis=dim, keepdims=True) if p == math.inf else \
        (magnitude**p).sum(axis=dim, keepdims=True) ** (1 / p)
    expected = zeroed / np.maximum(norm, 1e-12)
    assert_forward(F.normalize(tensor(zeroed, layout), p=p, dim=dim), expected)


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(max_dims=2), classes=st.integers(2, 5))
def test_one_hot(data, shape, classes):
    labels = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(0, classes - 1)))
    expected = np.array([[int(y == c) for c in range(classes)] for y in labels.reshape(-1)],
                        dtype=np.int64).reshape(shape + (classes,))
    assert_forward(F.one_hot(ids(labels), classes), expected)
    largest = int(labels.max())
    assert_forward(F.one_hot(ids(labels)), expected[..., :largest + 1])


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(max_dims=2), vocabulary=st.integers(2, 6),
       layout=layouts(), padding=st.booleans())
def test_embedding(data, shape, vocabulary, layout, padding):
    """out[p] = weight[ids[p]]; padding_idx changes only the gradient."""
    weight = data.draw(generic_arrays((vocabulary, 3)))
    tokens = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(0, vocabulary - 1)))
    expected = np.array([weight[t] for t in tokens.reshape(-1)]).reshape(shape + (3,))
    got = F.embedding(ids(tokens), tensor(weight, layout), padding_idx=0 if padding else None)
    assert_forward(got, expected)


def padded_source(i, n, left, mode):
    """The input position that padded position i (of a dim of n, left padding `left`)
    shows, or None for the constant."""
    j = i - left
    if 0 <= j < n:
        return j
    if mode == "constant":
        return None
    if mode == "reflect":  # mirror without repeating the edge
        return -j if j < 0 else 2 * (n - 1) - j
    if mode == "replicate":
        return 0 if j < 0 else n - 1
    return j % n  # circular


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@OP_SETTINGS
@given(data=st.data(), layout=layouts())
def test_pad(mode, data, layout):
    """(left, right) pairs from the last dim backwards; constant mode crops with negative
    amounts."""
    count = data.draw(st.integers(1, 3))
    shape = (2,) + tuple(data.draw(st.integers(2, 4)) for _ in range(count))
    x = data.draw(generic_arrays(shape))
    low = -1 if mode == "constant" else 0
    amounts, pairs = [], {}
    for dim in reversed(range(1, len(shape))):
        high = {"reflect": shape[dim] - 1, "circular": shape[dim]}.get(mode, 3)
        left, right = data.draw(st.integers(low, high)), data.draw(st.integers(low, high))
        amounts += [left, right]
        pairs[dim] = left, right
    out_shape = tuple(n + sum(pairs.get(d, (0, 0))) for d, n in enumerate(shape))
    expected = np.empty(out_shape)
    for position in np.ndindex(*out_shape):
        sources = [padded_source(i, shape[d], pairs.get(d, (0, 0))[0], mode)
                   for d, i in enumerate(position)]
        expected[position] = 0.75 if None in sources else x[tuple(sources)]
    value = 0.75 if mode == "constant" else None
    assert_forward(F.pad(tensor(x, layout), amounts, mode=mode, value=value), expected)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics(p):
    """Each element is zeroed with probability p (the count within 5 standard deviations
    of Binomial(n, p)), survivors are scaled by exactly 1 / (1 - p), the same seed gives
    the same mask, and evaluation or p = 0 is the identity."""
    x = np.linspace(0.5, 2.0, 20000).reshape(100, 200)
    mg.manual_seed(11)
    out = F.dropout(tensor(x), p).numpy()
    dropped = out == 0
    n = x.size
    assert abs(dropped.sum() - n * p) <= 5 * math.sqrt(n * p * (1 - p))
    np.testing.assert_allclose(out[~dropped], x[~dropped] / (1 - p), rtol=1e-15)
    rows_dropped = dropped.mean(axis=1)  # no row or column left out of the draw
    assert rows_dropped.min() > 0 and rows_dropped.max() < 1
    mg.manual_seed(11)
    assert_forward(F.dropout(tensor(x), p), out)
    assert_forward(F.dropout(tensor(x), p, training=False), x)
    assert_forward(F.dropout(tensor(x), 0.0), x)
    assert_forward(F.dropout(tensor(x), 1.0), np.zeros_like(x))
