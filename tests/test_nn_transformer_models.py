"""models.Transformer (the paper's layout: separate w_q, w_k, w_v, w_o, residual wrappers)
and nn's Transformer modules compute the same function: with models' weights mapped onto
nn's names (w_q, w_k, w_v stacked into in_proj), encoder and decoder outputs, gradients
and the model's logits agree to 1e-10 in float64.

The one structural difference: nn.Transformer ends both stacks in a LayerNorm, models only
with norm_first (its post-norm layers already end in one); the nn stacks are built with
norm=None there."""
from __future__ import annotations

import re

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from models import Transformer
from models.masks import causal_mask, padding_mask

PAD = 0
D_MODEL, NHEAD, LAYERS, FEEDFORWARD, SRC_VOCAB, TGT_VOCAB = 16, 4, 2, 24, 11, 13
TOLERANCE = {"rtol": 1e-10, "atol": 1e-10}


def nn_names(models_state: dict, stack: str) -> dict:
    """models' {name: array} of one stack ("encoder" or "decoder") under nn's names:
    w_q, w_k, w_v -> in_proj (stacked in that order), w_o -> out_proj, cross_attn ->
    multihead_attn, feed_forward.linear* -> linear*, residuals.i.norm -> norm{i+1}."""
    state, projections = {}, {}
    for name, value in models_state.items():
        if not name.startswith(stack + "."):
            continue
        name = name[len(stack) + 1:].replace("cross_attn", "multihead_attn")
        name = name.replace("feed_forward.", "").replace("w_o.", "out_proj.")
        name = re.sub(r"residuals\.(\d+)\.norm", lambda m: f"norm{int(m[1]) + 1}", name)
        projection = re.fullmatch(r"(.*)\.w_([qkv])\.(weight|bias)", name)
        if projection:
            attention, letter, kind = projection.groups()
            projections.setdefault(f"{attention}.in_proj_{kind}", {})[letter] = value
        else:
            state[name] = value
    for name, parts in projections.items():
        state[name] = np.concatenate([parts[letter] for letter in "qkv"])
    return state


def nn_twin(model: Transformer, norm_first: bool) -> nn.Transformer:
    """nn.Transformer (batch first) holding model's encoder and decoder weights."""
    def stack_norm():
        return nn.LayerNorm(D_MODEL) if norm_first else None

    layer_arguments = (D_MODEL, NHEAD, FEEDFORWARD, 0.0)
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(*layer_arguments, batch_first=True, norm_first=norm_first),
        LAYERS, stack_norm())
    decoder = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(*layer_arguments, batch_first=True, norm_first=norm_first),
        LAYERS, stack_norm())
    twin = nn.Transformer(D_MODEL, NHEAD, custom_encoder=encoder, custom_decoder=decoder,
                          batch_first=True).double()
    arrays = {name: value.numpy() for name, value in model.state_dict().items()}
    twin.load_state_dict({f"{stack}.{name}": value for stack in ("encoder", "decoder")
                          for name, value in nn_names(arrays, stack).items()})
    return twin


def tokens(rng, vocabulary: int, kept: list[int], length: int) -> mg.Tensor:
    """Token ids in 1..vocabulary-1, padded with PAD after kept[i] tokens in row i."""
    ids = rng.integers(1, vocabulary, size=(len(kept), length))
    ids[np.arange(length)[None, :] >= np.array(kept)[:, None]] = PAD
    return mg.tensor(ids)


@pytest.mark.parametrize("norm_first", [False, True])
def test_nn_transformer_computes_models_transformer(norm_first):
    mg.manual_seed(0)
    rng = np.random.default_rng(0)
    model = Transformer(SRC_VOCAB, TGT_VOCAB, D_MODEL, NHEAD, LAYERS, LAYERS, FEEDFORWARD,
                        dropout=0.0, norm_first=norm_first, tie_target_embeddings=True)
    model = model.double()
    twin = nn_twin(model, norm_first)
    src, tgt = tokens(rng, SRC_VOCAB, [6, 4], 6), tokens(rng, TGT_VOCAB, [5, 3], 5)
    src_pad, tgt_pad = src == PAD, tgt == PAD
    with mg.no_grad():
        embedded_src = model.positional(model.src_embed(src)).numpy()
        embedded_tgt = model.positional(model.tgt_embed(tgt)).numpy()

    # models' encoder and decoder on additive masks, nn's on PyTorch's mask arguments
    x, y = mg.tensor(embedded_src, requires_grad=True), mg.tensor(embedded_tgt, requires_grad=True)
    memory = model.encoder(x, padding_mask(src_pad, x.dtype))
    self_mask = causal_mask(5, 5, x.dtype) + padding_mask(tgt_pad, x.dtype)
    out = model.decoder(y, memory, self_mask, padding_mask(src_pad, x.dtype))

    x_nn = mg.tensor(embedded_src, requires_grad=True)
    y_nn = mg.tensor(embedded_tgt, requires_grad=True)
    memory_nn = twin.encoder(x_nn, src_key_padding_mask=src_pad)
    out_nn = twin.decoder(y_nn, memory_nn,
                          tgt_mask=nn.Transformer.generate_square_subsequent_mask(5),
                          tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
    np.testing.assert_allclose(memory_nn.numpy(), memory.numpy(), **TOLERANCE)
    np.testing.assert_allclose(out_nn.numpy(), out.numpy(), **TOLERANCE)

    upstream = rng.standard_normal(out.shape)
    (out * mg.tensor(upstream)).sum().backward()
    (out_nn * mg.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(x_nn.grad.numpy(), x.grad.numpy(), **TOLERANCE)
    np.testing.assert_allclose(y_nn.grad.numpy(), y.grad.numpy(), **TOLERANCE)
    grads = {name: parameter.grad.numpy() for name, parameter in model.named_parameters()
             if name.startswith(("encoder.", "decoder."))}
    expected = {f"{stack}.{name}": grad for stack in ("encoder", "decoder")
                for name, grad in nn_names(grads, stack).items()}
    twin_grads = {name: parameter.grad.numpy() for name, parameter in twin.named_parameters()}
    assert twin_grads.keys() == expected.keys()
    for name, grad in twin_grads.items():
        np.testing.assert_allclose(grad, expected[name], err_msg=name, **TOLERANCE)

    # the whole model: embeddings, nn.Transformer, then models' output projection
    with mg.no_grad():
        logits = model(src, tgt)
        twin_logits = model.generator(twin(
            mg.tensor(embedded_src), mg.tensor(embedded_tgt),
            tgt_mask=twin.generate_square_subsequent_mask(5), src_key_padding_mask=src_pad,
            tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad))
    np.testing.assert_allclose(twin_logits.numpy(), logits.numpy(), **TOLERANCE)
