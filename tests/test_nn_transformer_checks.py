"""nn.MultiheadAttention and the Transformer layers without an oracle: first and second
derivatives against finite differences (float64, hypothesis-drawn configurations), dropout
where PyTorch applies it (statistics), PyTorch's initialisation, and the errors for bad
arguments."""
from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import FEW_EXAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from minigrad.autograd import gradcheck, gradgradcheck

# every example builds full Jacobians with respect to every parameter: a few examples each
FIRST_ORDER = settings(FEW_EXAMPLES, max_examples=4)
SECOND_ORDER = settings(FEW_EXAMPLES, max_examples=2)


def leaf(rng, *shape) -> mg.Tensor:
    return mg.tensor(rng.standard_normal(shape), requires_grad=True)


def drawn_mask(rng, kind: str, shape) -> mg.Tensor | None:
    """None, a bool mask (True = blocked) or a float one (N(0, 1), some -inf); key 0 is
    never blocked."""
    if kind == "none":
        return None
    blocked = rng.random(shape) < 0.4
    blocked[..., 0] = False
    if kind == "bool":
        return mg.tensor(blocked)
    return mg.tensor(np.where(blocked, -np.inf, rng.standard_normal(shape)))


MASK_KINDS = st.sampled_from(["none", "bool", "float"])


# ----------------------------------------------------------------------------- derivatives


@FIRST_ORDER
@given(seed=st.integers(0, 2**31), batch_first=st.booleans(), add_bias_kv=st.booleans(),
       add_zero_attn=st.booleans(), kdim=st.sampled_from([None, 3]), mask=MASK_KINDS,
       padding=MASK_KINDS)
def test_multihead_attention_gradcheck(seed, batch_first, add_bias_kv, add_zero_attn, kdim,
                                       mask, padding):
    """Outputs and attention weights, with respect to query, key, value and every
    parameter."""
    rng = np.random.default_rng(seed)
    mg.manual_seed(seed)
    attention = nn.MultiheadAttention(4, 2, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                      kdim=kdim, vdim=kdim, batch_first=batch_first).double()
    features = kdim or 4
    query = leaf(rng, 2, 2, 4)  # (batch, length) or (length, batch): both are 2 here
    key, value = leaf(rng, 3, 2, features), leaf(rng, 3, 2, features)
    if batch_first:
        key, value = leaf(rng, 2, 3, features), leaf(rng, 2, 3, features)
    attn_mask = drawn_mask(rng, mask, (2, 3))
    key_padding_mask = drawn_mask(rng, padding, (2, 3))
    parameters = list(attention.parameters())

    def attend(q, k, v, *_):
        return attention(q, k, v, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                         average_attn_weights=False)

    assert gradcheck(attend, (query, key, value, *parameters))


@SECOND_ORDER
@given(seed=st.integers(0, 2**31), mask=MASK_KINDS, add_zero_attn=st.booleans())
def test_multihead_attention_gradgradcheck(seed, mask, add_zero_attn):
    rng = np.random.default_rng(seed)
    mg.manual_seed(seed)
    attention = nn.MultiheadAttention(4, 2, add_zero_attn=add_zero_attn).double()
    attn_mask = drawn_mask(rng, mask, (2, 2))

    def attend(q, k, v):
        return attention(q, k, v, attn_mask=attn_mask)

    assert gradgradcheck(attend, (leaf(rng, 2, 1, 4), leaf(rng, 2, 1, 4), leaf(rng, 2, 1, 4)))


def small_encoder_layer(norm_first: bool, activation: str = "relu") -> nn.Module:
    return nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=activation,
                                      norm_first=norm_first, batch_first=True).double()


def small_decoder_layer(norm_first: bool, activation: str = "relu") -> nn.Module:
    return nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, activation=activation,
                                      norm_first=norm_first, batch_first=True).double()


@FIRST_ORDER
@given(seed=st.integers(0, 2**31), norm_first=st.booleans(), mask=MASK_KINDS,
       padding=MASK_KINDS, activation=st.sampled_from(["relu", "gelu"]))
def test_encoder_layer_gradcheck(seed, norm_first, mask, padding, activation):
    rng = np.random.default_rng(seed)
    mg.manual_seed(seed)
    layer = small_encoder_layer(norm_first, activation)
    src_mask = drawn_mask(rng, mask, (3, 3))
    key_padding_mask = drawn_mask(rng, padding, (1, 3))

    def encode(src, *_):
        return layer(src, src_mask=src_mask, src_key_padding_mask=key_padding_mask)

    assert gradcheck(encode, (leaf(rng, 1, 3, 4), *layer.parameters()))


@settings(FIRST_ORDER, max_examples=3)
@given(seed=st.integers(0, 2**31), norm_first=st.booleans(), mask=MASK_KINDS,
       activation=st.sampled_from(["relu", "gelu"]))
def test_decoder_layer_gradcheck(seed, norm_first, mask, activation):
    rng = np.random.default_rng(seed)
    mg.manual_seed(seed)
    layer = small_decoder_layer(norm_first, activation)
    memory_mask = drawn_mask(rng, mask, (2, 3))
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(2, dtype=mg.float64)

    def decode(tgt, memory, *_):
        return layer(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)

    assert gradcheck(decode, (leaf(rng, 1, 2, 4), leaf(rng, 1, 3, 4), *layer.parameters()))


@SECOND_ORDER
@given(seed=st.integers(0, 2**31), norm_first=st.booleans())
def test_encoder_and_decoder_layer_gradgradcheck(seed, norm_first):
    """Second derivatives through attention, layer norm and GELU, with respect to the
    inputs (the parameters' first derivatives are checked above)."""
    rng = np.random.default_rng(seed)
    mg.manual_seed(seed)
    encoder = small_encoder_layer(norm_first, "gelu")
    decoder = small_decoder_layer(norm_first, "gelu")
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(2, dtype=mg.float64)
    assert gradgradcheck(encoder, (leaf(rng, 1, 2, 4),))
    assert gradgradcheck(lambda tgt, memory: decoder(tgt, memory, tgt_mask=tgt_mask),
                         (leaf(rng, 1, 2, 4), leaf(rng, 1, 2, 4)))


# ----------------------------------------------------------------------------- dropout


def assert_dropped(output: np.ndarray, kept_values: np.ndarray, p: float) -> None:
    """output is kept_values / (1 - p) or 0, and of the nonzero kept_values a fraction p
    (within 5 binomial standard deviations) is zeroed."""
    nonzero = kept_values != 0
    dropped = output[nonzero] == 0
    np.testing.assert_allclose(output[nonzero][~dropped],
                               kept_values[nonzero][~dropped] / (1 - p), rtol=1e-12)
    assert np.all(output[~nonzero] == 0)
    spread = 5 * np.sqrt(p * (1 - p) / dropped.size)
    assert abs(dropped.mean() - p) < spread, (dropped.mean(), p)


def test_multihead_attention_drops_attention_weights_in_training():
    """With W_v, out_proj = I, zero biases and one-hot values, the output row of a query is
    its attention-weight row: after dropout in training, the weights themselves in eval."""
    p, length = 0.3, 48
    rng = np.random.default_rng(0)
    attention = nn.MultiheadAttention(length, 1, dropout=p).double()
    in_projection = attention.in_proj_weight.numpy().copy()
    in_projection[2 * length:] = np.eye(length)
    attention.load_state_dict({**attention.state_dict(), "in_proj_weight": in_projection,
                               "out_proj.weight": np.eye(length)})
    query = mg.tensor(rng.standard_normal((length, 1, length)))
    key = mg.tensor(rng.standard_normal((length, 1, length)))
    one_hot_values = mg.tensor(np.eye(length)[:, None, :])
    trained, trained_weights = attention(query, key, one_hot_values)
    attention.eval()
    evaluated, weights = attention(query, key, one_hot_values)
    np.testing.assert_allclose(evaluated.numpy()[:, 0], weights.numpy()[0], rtol=1e-12)
    # the weights returned in training are those before dropout
    np.testing.assert_allclose(trained_weights.numpy(), weights.numpy(), rtol=1e-12)
    assert_dropped(trained.numpy()[:, 0], weights.numpy()[0], p)


@pytest.mark.parametrize("layer_class", [nn.TransformerEncoderLayer, nn.TransformerDecoderLayer])
def test_layer_dropouts_sit_where_pytorchs_do(layer_class):
    """In training every Dropout runs once on what PyTorch gives it: `dropout` on
    activation(linear1(x)), dropout1 on the self-attention output, dropout2 on the
    memory attention (decoder) or linear2 (encoder), dropout3 on linear2 (decoder)."""
    p, d_model = 0.4, 16
    rng = np.random.default_rng(1)
    layer = layer_class(d_model, 2, 64, dropout=p, batch_first=True).double()
    seen = {}

    def record(name):
        def hook(module, args, output):
            seen.setdefault(name, []).append(
                (args[0].numpy(), (output[0] if isinstance(output, tuple) else output).numpy()))
        return hook

    for name, module in layer.named_children():
        module.register_forward_hook(record(name))
    inputs = [mg.tensor(rng.standard_normal((4, 32, d_model)))]
    if layer_class is nn.TransformerDecoderLayer:
        inputs.append(mg.tensor(rng.standard_normal((4, 32, d_model))))
    layer(*inputs)

    decoder = layer_class is nn.TransformerDecoderLayer
    fed_by = {"dropout1": "self_attn", "dropout2": "multihead_attn" if decoder else "linear2"}
    if decoder:
        fed_by["dropout3"] = "linear2"
    dropouts = {name for name in seen if name.startswith("dropout")}
    assert dropouts == {"dropout", *fed_by}
    for name in dropouts:
        assert len(seen[name]) == 1, name
    assert np.array_equal(seen["dropout"][0][0], np.maximum(seen["linear1"][0][1], 0))
    for name, source in fed_by.items():
        assert np.array_equal(seen[name][0][0], seen[source][0][1]), name
    for name in dropouts:
        (given_input, output), = seen[name]
        assert_dropped(output, given_input, p)


def test_eval_mode_switches_every_dropout_off():
    """A decoder layer with dropout 0.5 in eval gives what the same weights give with
    dropout 0 in training."""
    rng = np.random.default_rng(2)
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.5).double().eval()
    reference = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0).double()
    reference.load_state_dict(layer.state_dict())
    tgt, memory = (mg.tensor(rng.standard_normal((3, 2, 8))) for _ in range(2))
    np.testing.assert_array_equal(layer(tgt, memory).numpy(), reference(tgt, memory).numpy())


# ----------------------------------------------------------------------------- initialisation


def assert_uniform_fills(values: np.ndarray, bound: float) -> None:
    """Values of U(-bound, bound): inside the range and reaching 80% of it."""
    assert np.abs(values).max() <= bound
    assert np.abs(values).max() > 0.8 * bound


def test_multihead_attention_initialisation_is_pytorchs():
    mg.manual_seed(0)
    embed, kdim = 64, 32
    packed = nn.MultiheadAttention(embed, 4, add_bias_kv=True)
    assert_uniform_fills(packed.in_proj_weight.numpy(), np.sqrt(6 / (embed + 3 * embed)))
    assert np.all(packed.in_proj_bias.numpy() == 0)
    assert np.all(packed.out_proj.bias.numpy() == 0)
    assert_uniform_fills(packed.out_proj.weight.numpy(), 1 / np.sqrt(embed))  # Linear's
    for bias in (packed.bias_k, packed.bias_v):  # Xavier-normal: std sqrt(2 / (E + E))
        assert bias.shape == (1, 1, embed)
        assert abs(bias.numpy().std() / np.sqrt(1 / embed) - 1) < 0.3
    separate = nn.MultiheadAttention(embed, 4, kdim=kdim, vdim=kdim)
    assert separate.in_proj_weight is None
    assert_uniform_fills(separate.q_proj_weight.numpy(), np.sqrt(6 / (2 * embed)))
    for weight in (separate.k_proj_weight, separate.v_proj_weight):
        assert_uniform_fills(weight.numpy(), np.sqrt(6 / (embed + kdim)))


def test_transformer_redraws_every_matrix_xavier_uniform():
    """Shapes chosen so that Linear's own range is wider (linear1) or narrower
    (out_proj, linear2) than Xavier's: only the reset passes."""
    mg.manual_seed(0)
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                           dim_feedforward=64)
    for name, parameter in model.named_parameters():
        values = parameter.numpy()
        if values.ndim > 1:
            fan_out, fan_in = values.shape
            assert_uniform_fills(values, np.sqrt(6 / (fan_in + fan_out)))
        elif "norm" in name:
            assert np.all(values == (1 if name.endswith("weight") else 0)), name
    first, second = model.encoder.layers
    assert not np.array_equal(first.linear1.weight.numpy(), second.linear1.weight.numpy())


def test_encoder_stack_holds_independent_copies_of_its_layer():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    encoder = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False, mask_check=False)
    weights = [copy.linear1.weight for copy in encoder.layers]
    assert len({id(w) for w in weights}) == 3 and all(w is not layer.linear1.weight
                                                      for w in weights)
    assert all(np.array_equal(w.numpy(), layer.linear1.weight.numpy()) for w in weights)
    assert encoder.num_layers == 3 and encoder.norm is None


# ----------------------------------------------------------------------------- errors


def raises(error, *fragments):
    """pytest.raises matching every fragment of the message (escaped)."""
    return pytest.raises(error, match="".join(f"(?=.*{re.escape(f)})" for f in fragments))


def test_constructor_errors_are_pytorchs():
    with raises(AssertionError, "embed_dim=10", "num_heads=3", "divisible"):
        nn.MultiheadAttention(10, 3)
    with raises(ValueError, "embed_dim=0"):
        nn.MultiheadAttention(0, 2)
    with raises(RuntimeError, "relu/gelu", "'tanh'"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_forward_errors_name_the_shapes():
    """The error types are PyTorch's for the same misuse."""
    attention = nn.MultiheadAttention(8, 2)
    x = mg.randn(4, 2, 8)
    with raises(AssertionError, "embedding dimension of 8", "(4, 2, 6)"):
        attention(mg.randn(4, 2, 6), x, x)
    with raises(AssertionError, "(4, 2, 8, 1)"):
        attention(x.reshape(4, 2, 8, 1), x, x)
    with raises(RuntimeError, "same batch size", "(4, 3, 8)"):
        attention(x, mg.randn(4, 3, 8), mg.randn(4, 3, 8))
    with raises(RuntimeError, "key features 8", "(4, 2, 6)"):
        attention(x, mg.randn(4, 2, 6), mg.randn(4, 2, 6))
    with raises(AssertionError, "same batch size and sequence length", "(5, 2, 8)"):
        attention(x, x, mg.randn(5, 2, 8))
    with raises(RuntimeError, "attn_mask is (4, 5)", "(4, 4)", "(4, 4, 4)"):
        attention(x, x, x, attn_mask=mg.zeros(4, 5))
    with raises(RuntimeError, "attn_mask is (2, 4, 4)", "(4, 4, 4)"):
        attention(x, x, x, attn_mask=mg.zeros(2, 4, 4))
    with raises(AssertionError, "key_padding_mask of shape (4, 2)", "(2, 4)"):
        attention(x, x, x, key_padding_mask=mg.zeros(4, 2, dtype=mg.bool))
    with raises(AssertionError, "bool and floating", "attn_mask", "int64"):
        attention(x, x, x, attn_mask=mg.zeros(4, 4, dtype=mg.int64))
    with raises(RuntimeError, "is_causal", "attn_mask"):
        attention(x, x, x, is_causal=True)


def test_transformer_forward_errors_name_the_shapes():
    model = nn.Transformer(8, 2, 1, 1, 16, batch_first=True)
    with raises(RuntimeError, "batch number", "(2, 5, 8)", "(3, 4, 8)"):
        model(mg.randn(2, 5, 8), mg.randn(3, 4, 8))
    with raises(RuntimeError, "d_model=8", "(2, 4, 6)"):
        model(mg.randn(2, 5, 8), mg.randn(2, 4, 6))
