"""KV caches for incremental decoding.

At step i the decoder sees only the newest token; every self-attention layer appends that
token's keys and values to its cache and attends over all i + 1 of them. The keys and
values of encoder-decoder attention depend only on the encoder output, so they are
computed at the first step and reused. Beam search reorders every cache by its
back-pointers so that row r of each cache always belongs to hypothesis r.
"""
from __future__ import annotations

import numpy as np

import minigrad as mg


class KVCache:
    """Keys and values of one attention layer, each (batch, heads, len, d_head).

    A growing cache (self-attention) appends what it is given; a static one (encoder-decoder
    attention) is filled once and then read, see `MultiHeadAttention`."""

    def __init__(self, static: bool = False):
        self.static = static
        self.keys: mg.Tensor | None = None
        self.values: mg.Tensor | None = None

    @property
    def filled(self) -> bool:
        return self.keys is not None

    def update(self, keys: mg.Tensor, values: mg.Tensor) -> tuple[mg.Tensor, mg.Tensor]:
        """Store new keys/values (appended along len unless static); return all of them."""
        if self.filled and not self.static:
            keys = mg.cat([self.keys, keys], dim=2)
            values = mg.cat([self.values, values], dim=2)
        self.keys, self.values = keys, values
        return keys, values

    def reorder(self, rows: mg.Tensor) -> None:
        """Row r becomes old row rows[r] (int64; rows may repeat or be left out)."""
        if self.filled:
            self.keys, self.values = self.keys[rows], self.values[rows]


class DecoderCache:
    """The caches of a whole decoder: for each layer a growing self-attention KVCache and a
    static encoder-decoder one, and `offset`, the number of target positions already fed
    (the position of the next token, for the positional encoding and the causal mask)."""

    def __init__(self, num_layers: int):
        self.self_attn = [KVCache() for _ in range(num_layers)]
        self.cross_attn = [KVCache(static=True) for _ in range(num_layers)]
        self.offset = 0

    def layer(self, i: int) -> tuple[KVCache, KVCache]:
        """(self-attention cache, encoder-decoder cache) of decoder layer i."""
        return self.self_attn[i], self.cross_attn[i]

    def reorder(self, index: np.ndarray) -> None:
        """Row r of every cache becomes old row index[r] (beam back-pointers)."""
        caches = self.self_attn + self.cross_attn
        if caches and caches[0].filled:
            rows = mg.tensor(index, dtype=mg.int64, device=caches[0].keys.device)
            for cache in caches:
                cache.reorder(rows)
