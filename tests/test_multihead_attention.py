"""nn.MultiheadAttention against torch.nn.MultiheadAttention: the same weights (loaded
through state_dict either way) give the same outputs, attention weights and gradients of
query, key, value and every parameter, in float64, for each argument and mask kind."""
from __future__ import annotations

import numpy as np
import pytest
from torch_twin import (
    assert_close,
    assert_parameter_grads_match,
    backward_both,
    direction_of,
    pair,
    pairs,
    share_weights,
    torch,
)

import minigrad as mg
from minigrad import nn

EMBED, HEADS, BATCH, QUERIES, KEYS = 8, 2, 3, 4, 5


@pytest.fixture(autouse=True)
def _reference_path():
    """torch's fused inference path computes in another order; its reference path is the
    one we compare against."""
    torch.backends.mha.set_fastpath_enabled(False)
    yield
    torch.backends.mha.set_fastpath_enabled(True)


def masks(kind: str, rng, batched: bool) -> dict:
    """Forward arguments for one mask kind. Bool masks block about 40% of the keys, float
    masks add N(0, 4) with about 30% -inf; key 0 is never blocked, so that no query is
    left with nothing to attend to (PyTorch gives NaN there)."""
    batch = BATCH if batched else 1
    shapes = {
        "attn_2d": (QUERIES, KEYS),
        "attn_3d": (batch * HEADS, QUERIES, KEYS),
        "padding": (BATCH, KEYS) if batched else (KEYS,),
    }
    argument = {"attn": "attn_mask", "padding": "key_padding_mask"}
    arguments = {}
    for part in kind.split("+"):
        if part == "none":
            continue
        dtype, where = part.split(":")
        shape = shapes[where]
        blocked = rng.random(shape) < (0.4 if dtype == "bool" else 0.3)
        blocked[..., 0] = False
        if dtype == "bool":
            mask = blocked
        else:
            mask = np.where(blocked, -np.inf, 2 * rng.standard_normal(shape))
        arguments[argument[where.split("_")[0]]] = mask
    return arguments


# (constructor arguments, mask kind, other forward arguments, batched)
CASES = [
    ({}, "none", {}, True),
    ({"batch_first": True}, "bool:attn_2d", {}, True),
    ({}, "float:attn_2d", {"average_attn_weights": False}, True),
    ({"batch_first": True}, "bool:attn_3d", {}, True),
    ({}, "float:attn_3d", {"average_attn_weights": False}, True),
    ({}, "bool:padding", {}, True),
    ({"batch_first": True}, "float:padding", {}, True),
    ({}, "bool:attn_2d+bool:padding", {"average_attn_weights": False}, True),
    ({"batch_first": True}, "float:attn_3d+float:padding", {}, True),
    ({"kdim": 5, "vdim": 3}, "bool:attn_2d+bool:padding", {}, True),
    ({"kdim": 6, "batch_first": True}, "float:attn_2d", {"need_weights": False}, True),
    ({"add_bias_kv": True}, "bool:attn_3d+bool:padding", {}, True),
    ({"add_zero_attn": True}, "float:attn_2d+float:padding", {}, True),
    ({"add_bias_kv": True, "add_zero_attn": True, "batch_first": True}, "float:attn_3d",
     {"average_attn_weights": False}, True),
    ({"bias": False}, "bool:padding", {"need_weights": False}, True),
    ({"dropout": 0.5, "eval": True}, "float:attn_2d", {}, True),
    ({}, "none", {}, False),
    ({"batch_first": True}, "bool:attn_3d+bool:padding", {}, False),
    ({"kdim": 5, "vdim": 3, "add_bias_kv": True}, "float:attn_2d+float:padding",
     {"average_attn_weights": False}, False),
    ({"add_zero_attn": True, "bias": False}, "bool:attn_2d", {"need_weights": False}, False),
]


def _case_id(case) -> str:
    options, kind, call, batched = case
    words = [f"{k}={v}" for k, v in {**options, **call}.items()] + [kind]
    return ",".join(words + ([] if batched else ["unbatched"]))


@pytest.mark.parametrize("case", CASES, ids=[_case_id(case) for case in CASES])
def test_multihead_attention_matches_torch(case):
    options, kind, call, batched = case
    options = dict(options)
    evaluate = options.pop("eval", False)
    rng = np.random.default_rng(CASES.index(case))
    direction = direction_of(CASES.index(case))
    ours = nn.MultiheadAttention(EMBED, HEADS, **options).double()
    theirs = torch.nn.MultiheadAttention(EMBED, HEADS, **options, dtype=torch.float64)
    share_weights(ours, theirs, direction)
    if evaluate:
        ours.eval()
        theirs.eval()

    def shape(length, features):
        if not batched:
            return (length, features)
        return (BATCH, length, features) if ours.batch_first else (length, BATCH, features)

    (query, key, value), (query_t, key_t, value_t) = zip(
        pair(rng.standard_normal(shape(QUERIES, EMBED))),
        pair(rng.standard_normal(shape(KEYS, ours.kdim))),
        pair(rng.standard_normal(shape(KEYS, ours.vdim))),
    )
    arguments, arguments_t = pairs({**masks(kind, rng, batched), **call})
    out, weights = ours(query, key, value, **arguments)
    out_t, weights_t = theirs(query_t, key_t, value_t, **arguments_t)

    assert_close(out, out_t)
    if call.get("need_weights", True):
        assert_close(weights, weights_t)
        outputs, outputs_t = (out, weights), (out_t, weights_t)
    else:
        assert weights is None and weights_t is None
        outputs, outputs_t = (out,), (out_t,)
    backward_both(outputs, outputs_t, rng)
    for leaf, leaf_t in ((query, query_t), (key, key_t), (value, value_t)):
        assert_close(leaf.grad, leaf_t.grad)
    assert_parameter_grads_match(ours, theirs)


def test_self_attention_with_causal_hint_matches_torch():
    """query is key is value, with is_causal=True and the causal mask: torch then takes
    its scaled_dot_product_attention path with is_causal; we apply the mask."""
    rng = np.random.default_rng(7)
    ours = nn.MultiheadAttention(EMBED, HEADS, batch_first=True).double()
    theirs = torch.nn.MultiheadAttention(EMBED, HEADS, batch_first=True, dtype=torch.float64)
    share_weights(ours, theirs, "ours_to_torch")
    x, x_t = pair(rng.standard_normal((BATCH, QUERIES, EMBED)))
    causal, causal_t = pair(nn.Transformer.generate_square_subsequent_mask(QUERIES).numpy())
    out, _ = ours(x, x, x, attn_mask=causal, need_weights=False, is_causal=True)
    out_t, _ = theirs(x_t, x_t, x_t, attn_mask=causal_t, need_weights=False, is_causal=True)
    assert_close(out, out_t)
    backward_both((out,), (out_t,), rng)
    assert_close(x.grad, x_t.grad)
    assert_parameter_grads_match(ours, theirs)


@pytest.mark.parametrize("options", [
    {}, {"bias": False}, {"kdim": 3}, {"vdim": 5, "add_bias_kv": True}, {"add_bias_kv": True},
])
def test_state_dict_names_and_shapes_are_torchs(options):
    ours = nn.MultiheadAttention(EMBED, HEADS, **options).state_dict()
    theirs = torch.nn.MultiheadAttention(EMBED, HEADS, **options).state_dict()
    assert list(ours) == list(theirs)
    assert [tuple(v.shape) for v in ours.values()] == [tuple(v.shape) for v in theirs.values()]


def test_float32_module_keeps_float32():
    """A float32 module on float32 inputs gives float32, within float32 rounding of torch."""
    rng = np.random.default_rng(3)
    ours = nn.MultiheadAttention(EMBED, HEADS)
    theirs = torch.nn.MultiheadAttention(EMBED, HEADS)
    share_weights(ours, theirs, "ours_to_torch")
    x = rng.standard_normal((QUERIES, BATCH, EMBED)).astype(np.float32)
    padding = np.zeros((BATCH, QUERIES), bool)
    padding[:, -1] = True
    out, weights = ours(mg.tensor(x), mg.tensor(x), mg.tensor(x),
                        key_padding_mask=mg.tensor(padding))
    with torch.no_grad():
        out_t, weights_t = theirs(*(torch.tensor(x),) * 3,
                                  key_padding_mask=torch.tensor(padding))
    assert out.dtype == mg.float32 and weights.dtype == mg.float32
    np.testing.assert_allclose(out.numpy(), out_t.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights.numpy(), weights_t.numpy(), rtol=1e-5, atol=1e-6)
