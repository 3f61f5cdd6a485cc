"""Encoder and decoder layers: attention and feed-forward sub-layers, each wrapped in a
residual connection with LayerNorm (post-norm as in the paper, or pre-norm)."""
from __future__ import annotations

from collections.abc import Callable

import minigrad as mg
from minigrad import nn
from models.attention import MultiHeadAttention
from models.cache import KVCache
from models.feedforward import PositionwiseFeedForward


class Residual(nn.Module):
    """The connection around one sub-layer, (batch, len, d_model) -> same:
    post-norm (paper)  LayerNorm(x + Dropout(sublayer(x))),
    pre-norm           x + Dropout(sublayer(LayerNorm(x)))."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: mg.Tensor, sublayer: Callable[[mg.Tensor], mg.Tensor]) -> mg.Tensor:
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward: x (batch, src_len, d_model), mask additive
    (batch, 1, 1, src_len) -> (batch, src_len, d_model)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float,
                 norm_first: bool = False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, dim_feedforward, dropout)
        self.residuals = nn.ModuleList(
            [Residual(d_model, dropout, norm_first) for _ in range(2)]
        )

    def forward(self, x: mg.Tensor, mask: mg.Tensor | None) -> mg.Tensor:
        x = self.residuals[0](x, lambda y: self.self_attn(y, y, y, mask))
        return self.residuals[1](x, self.feed_forward)


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention (queries from the decoder, keys and
    values from the encoder output `memory`), then feed-forward.

    x (batch, tgt_len, d_model), memory (batch, src_len, d_model), self_mask additive
    (batch or 1, 1, tgt_len, keys), memory_mask (batch, 1, 1, src_len), cache the pair
    (self-attention KVCache, encoder-decoder KVCache) or None -> (batch, tgt_len, d_model).
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float,
                 norm_first: bool = False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout)
        self.cross_attn = MultiHeadAttention(d_model, nhead, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, dim_feedforward, dropout)
        self.residuals = nn.ModuleList(
            [Residual(d_model, dropout, norm_first) for _ in range(3)]
        )

    def forward(self, x: mg.Tensor, memory: mg.Tensor, self_mask: mg.Tensor | None,
                memory_mask: mg.Tensor | None,
                cache: tuple[KVCache, KVCache] | None = None) -> mg.Tensor:
        self_cache, cross_cache = cache if cache is not None else (None, None)
        x = self.residuals[0](x, lambda y: self.self_attn(y, y, y, self_mask, self_cache))
        x = self.residuals[1](
            x, lambda y: self.cross_attn(y, memory, memory, memory_mask, cross_cache)
        )
        return self.residuals[2](x, self.feed_forward)
