"""Multi-head attention with separate W_Q, W_K, W_V, W_O projections and a KV cache."""
from __future__ import annotations

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from models.cache import KVCache


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O,
    head_i = softmax(Q W_Q_i (K W_K_i)^T / sqrt(d_head) + mask) V W_V_i,  d_head = d_model / h.

    query (batch, q_len, d_model), key and value (batch, k_len, d_model), mask additive and
    broadcastable to (batch, heads, q_len, k_len) -> (batch, q_len, d_model). All heads run
    in one batched matmul on (batch, heads, len, d_head) tensors.

    With `keep_weights` set (see `Transformer.keeping_attention_weights`), the attention
    probabilities of the last call, (batch, heads, q_len, k_len) before dropout, stay in
    `self.weights` (detached) for plotting; otherwise `self.weights` is None and nothing
    is kept, so training pays no copy and holds no extra memory.
    """

    def __init__(self, d_model: int, nhead: int, dropout: float = 0.0):
        super().__init__()
        if d_model % nhead:
            raise ValueError(
                f"MultiHeadAttention: d_model={d_model} is not divisible by nhead={nhead}"
            )
        self.nhead = nhead
        self.d_head = d_model // nhead
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = dropout  # on the attention weights, as in PyTorch
        self.keep_weights = False
        self.weights: mg.Tensor | None = None

    def forward(self, query: mg.Tensor, key: mg.Tensor, value: mg.Tensor,
                mask: mg.Tensor | None = None, cache: KVCache | None = None) -> mg.Tensor:
        """With a cache, key/value are only the new positions (self-attention) or are
        projected once and then read from the cache (static, encoder-decoder attention)."""
        q = self._split_heads(self.w_q(query))
        k, v = self._keys_values(key, value, cache)
        out, weights = F.attention(q, k, v, mask, self.dropout, self.training)
        # cleared when not kept, so that no stale weights outlive the call that made them
        self.weights = weights.detach() if self.keep_weights else None
        return self.w_o(self._merge_heads(out))

    def _keys_values(self, key, value, cache: KVCache | None):
        if cache is not None and cache.static and cache.filled:
            return cache.keys, cache.values
        k = self._split_heads(self.w_k(key))
        v = self._split_heads(self.w_v(value))
        return (k, v) if cache is None else cache.update(k, v)

    def _split_heads(self, x: mg.Tensor) -> mg.Tensor:
        """(batch, len, d_model) -> (batch, heads, len, d_head)"""
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.nhead, self.d_head).transpose(1, 2)

    def _merge_heads(self, x: mg.Tensor) -> mg.Tensor:
        """(batch, heads, len, d_head) -> (batch, len, d_model)"""
        batch, _, length, _ = x.shape
        return x.transpose(1, 2).reshape(batch, length, self.nhead * self.d_head)
