"""Scaled dot-product attention, with PyTorch's mask meaning: a boolean mask is True
where a query may attend, a float mask is added to the scores. A query that may attend
nowhere gets an all-zero weight row, so its output and gradients are 0, never NaN."""
from __future__ import annotations

import math

from minigrad.amp.cast_policy import autocast_op
from minigrad.creation import ones
from minigrad.dtypes import bool_
from minigrad.nn.functional.dropout import dropout
from minigrad.ops import masked_fill, softmax, tril
from minigrad.tensor import Tensor


def attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
              dropout_p: float = 0.0, training: bool = True, is_causal: bool = False,
              scale: float | None = None) -> tuple[Tensor, Tensor]:
    """(out, weights) with weights = softmax(q k^T * scale + mask) of shape (..., L, S)
    (before dropout: what attention plots show) and out = dropout(weights) @ v."""
    if attn_mask is not None and is_causal:
        raise ValueError("scaled_dot_product_attention: pass either attn_mask or "
                         "is_causal=True, not both")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query {tuple(query.shape)}, key "
            f"{tuple(key.shape)} and value {tuple(value.shape)} need query.shape[-1] == "
            "key.shape[-1] and key.shape[-2] == value.shape[-2]"
        )
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query * scale) @ key.transpose(-2, -1)
    if is_causal:
        attn_mask = causal_mask(query.shape[-2], key.shape[-2], query.device)
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = masked_fill(scores, ~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1)
    out = dropout(weights, dropout_p, training) @ value
    return out, weights


def causal_mask(query_length: int, key_length: int, device="cpu") -> Tensor:
    """Boolean (L, S) mask, True on and below the diagonal: query i sees keys 0..i."""
    return tril(ones(query_length, key_length, dtype=bool_, device=device))


@autocast_op("scaled_dot_product_attention")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None) -> Tensor:
    """softmax(q k^T / sqrt(E) + mask) @ v over (..., L, E) queries and (..., S, E) keys;
    dropout_p applies whenever it is > 0, as in PyTorch."""
    out, _ = attention(query, key, value, attn_mask, dropout_p, True, is_causal, scale)
    return out
