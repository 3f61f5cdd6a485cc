"""The Transformer of models/ against torch.nn.Transformer: the same weights give the same
logits (float64, within 1e-5). PyTorch is only the oracle here; models/ never imports it."""
from __future__ import annotations

import math

import numpy as np
import pytest

import minigrad as mg
from models import Transformer

torch = pytest.importorskip("torch")

PAD, BOS = 0, 1
D_MODEL, NHEAD, LAYERS, FEEDFORWARD = 16, 4, 2, 24


def as_torch(t: mg.Tensor):
    return torch.from_numpy(t.numpy().copy())


def copy_attention(ours, theirs) -> None:
    """w_q, w_k, w_v stack into in_proj (3 d_model, d_model); w_o is out_proj."""
    theirs.in_proj_weight.copy_(torch.cat([as_torch(ours.w_q.weight), as_torch(ours.w_k.weight),
                                           as_torch(ours.w_v.weight)]))
    theirs.in_proj_bias.copy_(torch.cat([as_torch(ours.w_q.bias), as_torch(ours.w_k.bias),
                                         as_torch(ours.w_v.bias)]))
    theirs.out_proj.weight.copy_(as_torch(ours.w_o.weight))
    theirs.out_proj.bias.copy_(as_torch(ours.w_o.bias))


def copy_linear_or_norm(ours, theirs) -> None:
    theirs.weight.copy_(as_torch(ours.weight))
    theirs.bias.copy_(as_torch(ours.bias))


def copy_layer(ours, theirs) -> None:
    """Our residuals[i].norm is torch's norm{i+1}; our feed_forward holds linear1/linear2."""
    copy_attention(ours.self_attn, theirs.self_attn)
    if hasattr(ours, "cross_attn"):
        copy_attention(ours.cross_attn, theirs.multihead_attn)
    copy_linear_or_norm(ours.feed_forward.linear1, theirs.linear1)
    copy_linear_or_norm(ours.feed_forward.linear2, theirs.linear2)
    for i, residual in enumerate(ours.residuals):
        copy_linear_or_norm(residual.norm, getattr(theirs, f"norm{i + 1}"))


def torch_twin(model: Transformer, norm_first: bool):
    """torch.nn.Transformer with our weights. torch always ends each stack in a LayerNorm;
    our post-norm layers already end in one, so there it is removed (norm=None)."""
    twin = torch.nn.Transformer(D_MODEL, NHEAD, LAYERS, LAYERS, FEEDFORWARD, dropout=0.0,
                                batch_first=True, norm_first=norm_first,
                                dtype=torch.float64)
    with torch.no_grad():
        for ours, theirs in ((model.encoder, twin.encoder), (model.decoder, twin.decoder)):
            if norm_first:
                copy_linear_or_norm(ours.norm, theirs.norm)
            else:
                theirs.norm = None
        for ours, theirs in zip(model.encoder.layers, twin.encoder.layers, strict=True):
            copy_layer(ours, theirs)
        for ours, theirs in zip(model.decoder.layers, twin.decoder.layers, strict=True):
            copy_layer(ours, theirs)
    return twin


def torch_logits(model: Transformer, twin, src: np.ndarray, tgt: np.ndarray):
    """Embeddings, positional encoding and the output Linear done by hand in torch."""
    scale = math.sqrt(D_MODEL)
    pe = as_torch(model.positional.pe)
    src_t, tgt_t = torch.from_numpy(src), torch.from_numpy(tgt)
    src_x = as_torch(model.src_embed.embedding.weight)[src_t] * scale + pe[:src.shape[1]]
    tgt_x = as_torch(model.tgt_embed.embedding.weight)[tgt_t] * scale + pe[:tgt.shape[1]]
    causal = torch.triu(torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool), 1)
    # train mode (dropout is 0) keeps torch off its fused inference fast path
    out = twin(src_x, tgt_x, tgt_mask=causal, src_key_padding_mask=src_t == PAD,
               memory_key_padding_mask=src_t == PAD, tgt_key_padding_mask=tgt_t == PAD)
    return out @ as_torch(model.generator.weight).T + as_torch(model.generator.bias)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")  # torch, pre-norm
@pytest.mark.parametrize("norm_first", [False, True])
def test_same_logits_as_torch_transformer(norm_first):
    mg.manual_seed(0)
    model = Transformer(11, 13, d_model=D_MODEL, nhead=NHEAD, num_encoder_layers=LAYERS,
                        num_decoder_layers=LAYERS, dim_feedforward=FEEDFORWARD, dropout=0.0,
                        norm_first=norm_first, pad_id=PAD).to(mg.float64).eval()
    src = np.array([[3, 4, 5, 6, 7], [8, 9, 10, PAD, PAD]])
    tgt = np.array([[BOS, 3, 4, 5], [BOS, 6, PAD, PAD]])
    ours = model(mg.tensor(src), mg.tensor(tgt)).numpy()
    theirs = torch_logits(model, torch_twin(model, norm_first), src, tgt).detach().numpy()
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)
    assert np.abs(ours - theirs).max() < 1e-10  # in fact the same up to rounding
