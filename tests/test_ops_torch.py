"""PyTorch as the oracle: every differentiable op, forward and backward (random upstream
gradient), float64, to ~1e-10. Skipped cleanly where torch is not installed."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from helpers import (
    FEW_EXAMPLES,
    arrays,
    away_from,
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
from hypothesis.extra import numpy as hnp
from torch_oracle import assert_matches_torch

import minigrad as mg

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.device

MG = SimpleNamespace(
    lib=mg,
    name="minigrad",
    gelu=lambda x, approximate="none": x.gelu(approximate=approximate),
    erf=mg.erf,
    index=lambda array: make_tensor(np.asarray(array)),
    float32=mg.float32,
    float64=mg.float64,
)
TORCH = SimpleNamespace(
    lib=torch,
    name="torch",
    gelu=lambda x, approximate="none": torch.nn.functional.gelu(x, approximate=approximate),
    erf=torch.erf,
    index=lambda array: torch.as_tensor(np.asarray(array)),
    float32=torch.float32,
    float64=torch.float64,
)

pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)
ties = st.sampled_from([-1.0, 0.0, 0.5, 1.0])  # few values: many ties


def one(elements=None, shape=None, distinct=False):
    """Inputs: one array of a drawn (or given) shape."""
    def draw(data):
        drawn = shape if shape is not None else data.draw(shapes())
        return [data.draw(distinct_arrays(drawn) if distinct else arrays(drawn, elements))]
    return draw


def two(elements_a=None, elements_b=None):
    """Inputs: two arrays of mutually broadcastable shapes."""
    def draw(data):
        shape_a, shape_b = data.draw(pairs).input_shapes
        return [data.draw(arrays(shape_a, elements_a)), data.draw(arrays(shape_b, elements_b))]
    return draw


def fixed(*shape_list, elements=None):
    def draw(data):
        return [data.draw(arrays(s, elements)) for s in shape_list]
    return draw


def _mask(shape):
    return (np.arange(int(np.prod(shape))).reshape(shape) % 3) == 1


# name -> (input drawer, f(L, *tensors) written once for both libraries)
CASES = {
    "add": (two(), lambda L, a, b: a + b),
    "sub": (two(), lambda L, a, b: a - b),
    "mul": (two(), lambda L, a, b: a * b),
    "div": (two(floats(), nonzero(0.5)), lambda L, a, b: a / b),
    "rdiv_scalar": (one(nonzero(0.5)), lambda L, a: 2.5 / a),
    "neg": (one(), lambda L, a: -a),
    "pow_scalar": (one(), lambda L, a: a**3),
    "pow_negative": (one(nonzero(0.5)), lambda L, a: a**-2),
    "pow_fractional": (one(positive()), lambda L, a: a**0.5),
    "pow_tensor": (two(positive(), floats(-2, 2)), lambda L, a, b: a**b),
    "rpow_scalar": (one(floats(-2, 2)), lambda L, a: 1.7**a),
    "matmul_2d": (fixed((2, 3), (3, 4)), lambda L, a, b: a @ b),
    "matmul_1d_1d": (fixed((3,), (3,)), lambda L, a, b: a @ b),
    "matmul_1d_nd": (fixed((3,), (2, 3, 2)), lambda L, a, b: L.lib.matmul(a, b)),
    "matmul_nd_1d": (fixed((2, 2, 3), (3,)), lambda L, a, b: a @ b),
    "matmul_batch_broadcast": (fixed((2, 1, 2, 3), (3, 3, 2)), lambda L, a, b: a @ b),
    "exp": (one(), lambda L, a: a.exp()),
    "log": (one(positive()), lambda L, a: a.log()),
    "sqrt": (one(positive()), lambda L, a: a.sqrt()),
    "rsqrt": (one(positive()), lambda L, a: a.rsqrt()),
    "abs": (one(nonzero(0.1)), lambda L, a: a.abs()),
    "tanh": (one(), lambda L, a: a.tanh()),
    "sigmoid": (one(floats(-20, 20)), lambda L, a: a.sigmoid()),
    "relu": (one(nonzero(0.1)), lambda L, a: a.relu()),
    "gelu": (one(floats(-5, 5)), lambda L, a: L.gelu(a)),
    "gelu_tanh": (one(floats(-5, 5)), lambda L, a: L.gelu(a, approximate="tanh")),
    "erf": (one(), lambda L, a: L.erf(a)),
    "clamp": (one(away_from([-0.5, 0.5], 0.05)), lambda L, a: a.clamp(-0.5, 0.5)),
    "clamp_min": (one(away_from([0.2], 0.05)), lambda L, a: a.clamp(min=0.2)),
    "sum_all": (one(), lambda L, a: a.sum()),
    "sum_dims": (one(shape=(2, 3, 2)), lambda L, a: a.sum((0, 2), keepdim=True)),
    "mean_dim": (one(shape=(2, 3)), lambda L, a: a.mean(-1)),
    "mean_all": (one(), lambda L, a: a.mean()),
    "max_all_ties": (one(ties), lambda L, a: a.max()),
    "min_all_ties": (one(ties), lambda L, a: a.min()),
    "max_dim_ties": (one(ties, shape=(3, 4)), lambda L, a: a.max(1)),
    "min_dim_keepdim_ties": (one(ties, shape=(3, 4)), lambda L, a: a.min(0, keepdim=True)),
    "max_dim_distinct": (one(shape=(2, 3, 2), distinct=True), lambda L, a: a.max(-2)),
    "amax_ties": (one(ties, shape=(3, 4)), lambda L, a: L.lib.amax(a, 1)),
    "amax_dims": (one(ties, shape=(2, 3, 2)), lambda L, a: L.lib.amax(a, (0, 2), keepdim=True)),
    "var": (one(shape=(3, 4)), lambda L, a: a.var(1)),
    "var_biased_all": (one(shape=(3, 4)), lambda L, a: a.var(unbiased=False)),
    "var_correction": (one(shape=(3, 4)), lambda L, a: a.var(0, correction=2, keepdim=True)),
    "std": (one(shape=(3, 4), distinct=True), lambda L, a: a.std(0)),
    "std_all": (one(shape=(3, 4), distinct=True), lambda L, a: a.std()),
    "logsumexp": (one(shape=(3, 4)), lambda L, a: a.logsumexp(1)),
    "logsumexp_dims": (one(shape=(2, 3, 2)), lambda L, a: a.logsumexp((0, 2), keepdim=True)),
    "softmax_last": (one(shape=(2, 3, 4)), lambda L, a: a.softmax(-1)),
    "softmax_first": (one(shape=(2, 3, 4)), lambda L, a: a.softmax(0)),
    "softmax_middle": (one(shape=(2, 3, 4)), lambda L, a: L.lib.softmax(a, 1)),
    "softmax_0d": (one(shape=()), lambda L, a: a.softmax(0)),
    "log_softmax_last": (one(shape=(2, 3, 4)), lambda L, a: a.log_softmax(-1)),
    "log_softmax_middle": (one(shape=(2, 3, 4)), lambda L, a: L.lib.log_softmax(a, 1)),
    "log_softmax_large_values": (one(floats(-300, 300), shape=(2, 5)),
                                 lambda L, a: a.log_softmax(1)),
    "where": (two(), lambda L, a, b: L.lib.where(L.index(_mask(np.broadcast_shapes(
        a.shape, b.shape))), a, b)),
    "masked_fill": (one(shape=(3, 4)), lambda L, a: a.masked_fill(L.index(_mask((3, 4))), -2.0)),
    "masked_fill_broadcast": (one(shape=(2, 3, 4)), lambda L, a: a.masked_fill(
        L.index(np.triu(np.ones((3, 4), dtype=bool), 1)), float("-inf")).softmax(-1)),
    "maximum": (two(), lambda L, a, b: L.lib.maximum(a, b)),
    "maximum_ties": (two(ties, ties), lambda L, a, b: L.lib.maximum(a, b)),
    "minimum_ties": (two(ties, ties), lambda L, a, b: L.lib.minimum(a, b)),
    "triu": (one(shape=(2, 3, 4)), lambda L, a: L.lib.triu(a, 1)),
    "tril": (one(shape=(4, 3)), lambda L, a: L.lib.tril(a, -1)),
    "reshape": (one(shape=(2, 3, 2)), lambda L, a: a.reshape(3, -1)),
    "view": (one(shape=(2, 3, 2)), lambda L, a: a.contiguous().view(6, 2)),
    "permute": (one(shape=(2, 3, 2)), lambda L, a: a.permute(2, 0, 1)),
    "transpose": (one(shape=(2, 3, 2)), lambda L, a: a.transpose(0, -1)),
    "T": (one(shape=(2, 3)), lambda L, a: a.T),
    "unsqueeze": (one(shape=(2, 3)), lambda L, a: a.unsqueeze(-2)),
    "squeeze": (one(shape=(2, 1, 3, 1)), lambda L, a: a.squeeze()),
    "squeeze_dim": (one(shape=(2, 1, 3)), lambda L, a: a.squeeze(1)),
    "expand": (one(shape=(3, 1)), lambda L, a: a.expand(2, 3, 4)),
    "flatten": (one(shape=(2, 3, 2)), lambda L, a: a.flatten(1)),
    "contiguous": (one(shape=(2, 3)), lambda L, a: a.T.contiguous()),
    "clone": (one(), lambda L, a: a.clone() * a),
    "cat": (fixed((2, 3), (2, 1), (2, 2)), lambda L, a, b, c: L.lib.cat([a, b, c], 1)),
    "stack": (fixed((2, 3), (2, 3)), lambda L, a, b: L.lib.stack([a, b], -1)),
    "split": (one(shape=(5, 2)), lambda L, a: a.split(2)),
    "split_sizes": (one(shape=(2, 5)), lambda L, a: a.split([1, 4], 1)),
    "chunk": (one(shape=(5, 2)), lambda L, a: a.chunk(3)),
    "getitem_steps": (one(shape=(4, 5)), lambda L, a: a[::2, 1::3]),  # torch: no negative steps
    "getitem_none_ellipsis": (one(shape=(2, 3, 4)), lambda L, a: a[None, ..., 1]),
    "getitem_repeats": (one(shape=(4, 3)), lambda L, a: a[L.index([0, 2, 0, 0])]),
    "getitem_two_arrays": (one(shape=(4, 3)),
                           lambda L, a: a[L.index([[0, 1], [1, 0]]), L.index([2, 2])]),
    "getitem_mixed": (one(shape=(2, 4, 3)), lambda L, a: a[1, L.index([3, 3, 0]), ::2]),
    "getitem_bool": (one(shape=(3, 4)), lambda L, a: a[L.index(_mask((3, 4)))]),
    "getitem_bool_rows": (one(shape=(3, 4)), lambda L, a: a[L.index([True, False, True])]),
    "to_float32_and_back": (one(), lambda L, a: a.to(L.float32).to(L.float64) * a),
}


@pytest.mark.parametrize("name", list(CASES))
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_forward_and_backward_match_torch(name, data, layout):
    draw_inputs, func = CASES[name]
    values = draw_inputs(data)
    ours = [make_tensor(v, requires_grad=True, layout=layout) for v in values]
    theirs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    assert_matches_torch(ours, theirs, func(MG, *ours), func(TORCH, *theirs))


@FEW_EXAMPLES
@given(data=st.data())
def test_gradient_of_gradient_matches_torch(data):
    """Second derivatives of a small network, through create_graph, against torch."""
    values = [data.draw(arrays(s)) for s in [(3, 4), (4,), (4, 3), (2, 3)]]
    ours = [make_tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]

    def loss(L, w1, b1, w2, x):
        hidden = L.gelu(x @ w1 + b1)
        spread = hidden.var(-1, keepdim=True) * hidden.tanh()
        return (hidden @ w2).log_softmax(-1).sum() + spread.sum()

    our_grads = mg.autograd.grad(loss(MG, *ours), ours, create_graph=True)
    their_grads = torch.autograd.grad(loss(TORCH, *theirs), theirs, create_graph=True)
    sum((g * g).sum() for g in our_grads).backward()
    sum((g * g).sum() for g in their_grads).backward()
    for mine, ref in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=1e-8, atol=1e-10)
