"""Additive attention masks: 0 where a query may look at a key, -inf where it may not.

Masks act on keys only: a padded key gets no attention from any query, and a query is
never masked (its output for a pad position is computed and simply ignored). They are
built once per forward pass and added to the scores (batch, heads, q_len, k_len) of every
layer by broadcasting.
"""
from __future__ import annotations

import minigrad as mg


def padding_mask(pad: mg.Tensor, dtype) -> mg.Tensor:
    """pad (batch, k_len) bool, True at padding -> (batch, 1, 1, k_len) additive mask."""
    batch, length = pad.shape
    zeros = mg.zeros(batch, 1, 1, length, dtype=dtype, device=pad.device)
    return zeros.masked_fill(pad.reshape(batch, 1, 1, length), float("-inf"))


def causal_mask(q_len: int, k_len: int, dtype, device="cpu") -> mg.Tensor | None:
    """(1, 1, q_len, k_len) additive mask hiding from query i the keys after its position.

    The queries are the last q_len of the k_len positions (with a KV cache the earlier keys
    come from previous steps), so query i sits at position k_len - q_len + i. None when no
    query has a future key (a single new query)."""
    if q_len == 1:
        return None
    blocked = mg.full((q_len, k_len), float("-inf"), dtype=dtype, device=device)
    return mg.triu(blocked, diagonal=k_len - q_len + 1).reshape(1, 1, q_len, k_len)


def combine(first: mg.Tensor | None, second: mg.Tensor | None) -> mg.Tensor | None:
    """The sum of two additive masks, either of which may be absent."""
    if first is None:
        return second
    if second is None:
        return first
    return first + second
