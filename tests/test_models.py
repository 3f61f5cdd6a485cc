"""The Transformer in models/: shapes, masks (causality, padding), gradients, training,
and the KV cache of incremental decoding, on MINIGRAD_TEST_DEVICE (see conftest.py)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import test_device

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import optim
from minigrad.autograd import gradcheck
from models import MultiHeadAttention, PositionalEncoding, Transformer

pytestmark = pytest.mark.device
DEVICE = test_device()
PAD, BOS, EOS = 0, 1, 2


def small_model(norm_first: bool = False, seed: int = 0, **kwargs) -> Transformer:
    """A float64 two-layer model in eval mode (no dropout), vocabularies of 11 and 13."""
    mg.manual_seed(seed)
    settings = dict(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                    dim_feedforward=32, dropout=0.0, norm_first=norm_first, pad_id=PAD)
    settings.update(kwargs)
    return Transformer(11, 13, **settings).to(mg.float64).to(DEVICE).eval()


def tokens(rows) -> mg.Tensor:
    return mg.tensor(rows, dtype=mg.int64, device=DEVICE)


SRC = [[3, 4, 5, 6, 7], [8, 9, 10, PAD, PAD]]
TGT = [[BOS, 3, 4, 5, 6, 7], [BOS, 8, 9, 10, 11, 12]]


def test_shapes_and_attention_weights():
    model = small_model()
    with model.keeping_attention_weights():
        logits = model(tokens(SRC), tokens(TGT))
    assert logits.shape == (2, 6, 13)
    weights = model.attention_weights()
    assert set(weights) == {"encoder.0.self_attn", "encoder.1.self_attn",
                            "decoder.0.self_attn", "decoder.1.self_attn",
                            "decoder.0.cross_attn", "decoder.1.cross_attn"}
    assert weights["encoder.1.self_attn"].shape == (2, 4, 5, 5)
    assert weights["decoder.0.self_attn"].shape == (2, 4, 6, 6)
    assert weights["decoder.0.cross_attn"].shape == (2, 4, 6, 5)
    cross = weights["decoder.1.cross_attn"].numpy()
    np.testing.assert_allclose(cross.sum(-1), 1.0, atol=1e-12)
    assert np.all(cross[1, :, :, 3:] == 0), "padded source keys must get no attention"
    self_attn = weights["decoder.1.self_attn"].numpy()
    assert np.all(np.triu(np.ones((6, 6)), 1)[None, None] * self_attn == 0), "future keys"


def test_attention_weights_are_kept_only_when_asked():
    model = small_model()
    layers = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    model(tokens(SRC), tokens(TGT))
    assert all(layer.weights is None for layer in layers)
    with pytest.raises(RuntimeError, match="keeping_attention_weights"):
        model.attention_weights()
    with pytest.raises(KeyError), model.keeping_attention_weights():
        raise KeyError("the flags are restored even when the block fails")
    assert not any(layer.keep_weights for layer in layers)
    with model.keeping_attention_weights():
        model(tokens(SRC), tokens(TGT))
    assert len(model.attention_weights()) == len(layers) == 6
    model(tokens(SRC), tokens(TGT))  # a later forward outside the block leaves nothing stale
    assert all(layer.weights is None for layer in layers)


def test_attention_weights_of_a_lone_decode_are_the_decoder_layers():
    model = small_model()
    memory = model.encode(tokens(SRC))
    with model.keeping_attention_weights():
        model.decode(tokens(TGT), memory, tokens(SRC) == PAD)
    assert set(model.attention_weights()) == {"decoder.0.self_attn", "decoder.1.self_attn",
                                              "decoder.0.cross_attn", "decoder.1.cross_attn"}


@pytest.mark.parametrize("norm_first", [False, True])
def test_causality(norm_first):
    """Changing target tokens after position t leaves the logits up to t unchanged."""
    model = small_model(norm_first)
    original = model(tokens(SRC), tokens(TGT)).numpy()
    for t in range(5):
        changed = np.array(TGT)
        changed[:, t + 1:] = (changed[:, t + 1:] + 5) % 13
        logits = model(tokens(SRC), tokens(changed.tolist())).numpy()
        np.testing.assert_allclose(logits[:, :t + 1], original[:, :t + 1], atol=1e-12)
        assert not np.allclose(logits[:, t + 1:], original[:, t + 1:])


@pytest.mark.parametrize("norm_first", [False, True])
def test_source_padding_changes_nothing(norm_first):
    """Appending pad tokens to a source leaves the outputs for real tokens unchanged."""
    model = small_model(norm_first)
    src = tokens([[3, 4, 5]])
    padded = tokens([[3, 4, 5, PAD, PAD, PAD]])
    tgt = tokens([[BOS, 6, 7, 8]])
    np.testing.assert_allclose(model.encode(padded).numpy()[:, :3],
                               model.encode(src).numpy(), atol=1e-12)
    np.testing.assert_allclose(model(padded, tgt).numpy(), model(src, tgt).numpy(),
                               atol=1e-12)


def test_target_padding_masks_keys_only():
    """A padded target position changes no other position's logits."""
    model = small_model()
    src = tokens([[3, 4, 5]])
    short = model(src, tokens([[BOS, 6, 7]])).numpy()
    padded = model(src, tokens([[BOS, 6, 7, PAD, PAD]])).numpy()
    np.testing.assert_allclose(padded[:, :3], short, atol=1e-12)
    assert np.all(np.isfinite(padded))


def test_a_target_key_marked_as_padding_gets_no_attention():
    """Wherever it stands (here before real tokens, where the causal mask does not hide
    it), the token at a position tgt_pad_mask marks changes no other position's logits."""
    model = small_model()
    src = tokens([[3, 4, 5]])
    pad = mg.tensor([[False, True, False, False]], device=DEVICE)
    first, second = (model(src, tokens([[BOS, token, 6, 7]]), tgt_pad_mask=pad).numpy()
                     for token in (8, 9))
    np.testing.assert_allclose(first[:, [0, 2, 3]], second[:, [0, 2, 3]], atol=1e-12)


def test_gradcheck_tiny_model():
    """float64 gradients of every logit w.r.t. parameters from each kind of sub-layer."""
    mg.manual_seed(3)
    model = Transformer(5, 6, d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                        dim_feedforward=12, dropout=0.0).to(mg.float64).to(DEVICE)
    src, tgt = tokens([[3, 4, PAD]]), tokens([[BOS, 4, 3]])
    checked = [
        model.encoder.layers[0].self_attn.w_q.weight,
        model.encoder.layers[0].residuals[0].norm.weight,
        model.decoder.layers[0].self_attn.w_v.bias,
        model.decoder.layers[0].cross_attn.w_k.weight,
        model.decoder.layers[0].feed_forward.linear1.bias,
        model.src_embed.embedding.weight,
    ]
    assert gradcheck(lambda *params: model(src, tgt), checked, atol=1e-7, rtol=1e-5)


def test_overfits_one_batch():
    """Adam drives the cross-entropy of one small batch below 0.05 in 80 steps."""
    mg.manual_seed(0)
    model = Transformer(11, 13, d_model=32, nhead=4, num_encoder_layers=1,
                        num_decoder_layers=1, dim_feedforward=64, dropout=0.0).to(DEVICE)
    rng = np.random.default_rng(0)
    src = tokens(rng.integers(3, 11, size=(8, 6)).tolist())
    target = rng.integers(3, 13, size=(8, 6))
    decoder_in = tokens(np.concatenate([np.full((8, 1), BOS), target[:, :-1]], 1).tolist())
    target = tokens(target.tolist())
    optimizer = optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(80):
        logits = model(src, decoder_in)
        loss = F.cross_entropy(logits.reshape(-1, 13), target.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05


def test_tied_target_embeddings():
    model = Transformer(11, 13, d_model=16, nhead=2, num_encoder_layers=1,
                        num_decoder_layers=1, dim_feedforward=32,
                        tie_target_embeddings=True)
    assert model.generator.weight is model.tgt_embed.embedding.weight
    names = [name for name, _ in model.named_parameters()]
    assert "generator.weight" not in names and len(names) == len(set(names))


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_decoding_matches_full_prefix(norm_first):
    """Feeding one token at a time through the KV cache gives the logits of the full
    prefix, at every step; so does feeding a chunk of several new tokens."""
    model = small_model(norm_first)
    src, tgt = tokens(SRC), tokens(TGT)
    memory = model.encode(src)
    pad = src == PAD
    full = model.decode(tgt, memory, pad).numpy()
    cache = model.new_cache()
    steps = [model.decode(tgt[:, i:i + 1], memory, pad, cache=cache).numpy()
             for i in range(6)]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-10)
    chunked = model.new_cache()
    first = model.decode(tgt[:, :2], memory, pad, cache=chunked).numpy()
    rest = model.decode(tgt[:, 2:], memory, pad, cache=chunked).numpy()
    np.testing.assert_allclose(np.concatenate([first, rest], axis=1), full, atol=1e-10)


def test_positional_encoding_offset():
    encoding = PositionalEncoding(8, max_len=20, dropout=0.0).to(DEVICE)
    x = mg.zeros(1, 6, 8, device=DEVICE)
    full = encoding(x).numpy()
    np.testing.assert_array_equal(encoding(x[:, 4:], offset=4).numpy(), full[:, 4:])
    np.testing.assert_allclose(full[0, 0], [0, 1] * 4)  # sin(0), cos(0)
    with pytest.raises(ValueError, match="max_len"):
        encoding(x, offset=15)


def test_heads_must_divide_d_model():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
