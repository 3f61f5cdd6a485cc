"""Token embeddings scaled by sqrt(d_model), and the sinusoidal positional encoding."""
from __future__ import annotations

import math

import numpy as np

import minigrad as mg
from minigrad import nn


class TokenEmbedding(nn.Module):
    """tokens (batch, len) int64 -> embedding rows * sqrt(d_model), (batch, len, d_model).

    The scale keeps the embeddings on the same footing as the positional encoding, whose
    entries are in [-1, 1] (section 3.4 of the paper)."""

    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)

    def forward(self, tokens: mg.Tensor) -> mg.Tensor:
        return self.embedding(tokens) * self.scale


class PositionalEncoding(nn.Module):
    """x (batch, len, d_model) -> dropout(x + PE[offset : offset + len]).

    PE[pos, 2i] = sin(pos / 10000^(2i / d_model)),  PE[pos, 2i+1] = cos(same angle).
    `offset` is the position of x's first row: incremental decoding feeds step i alone and
    adds PE[i]. The table (max_len, d_model) is a buffer: saved, moved with the model,
    never trained."""

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", mg.tensor(sinusoid_table(max_len, d_model)))

    def forward(self, x: mg.Tensor, offset: int = 0) -> mg.Tensor:
        length = x.shape[1]
        if offset + length > self.pe.shape[0]:
            raise ValueError(
                f"PositionalEncoding: positions {offset}..{offset + length - 1} exceed the "
                f"table of max_len={self.pe.shape[0]}; build the model with a larger max_len"
            )
        return self.dropout(x + self.pe[offset:offset + length])


def sinusoid_table(max_len: int, d_model: int) -> np.ndarray:
    """The (max_len, d_model) float32 table of sines (even columns) and cosines (odd)."""
    position = np.arange(max_len, dtype=np.float64)[:, None]
    frequency = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    table = np.zeros((max_len, d_model))
    table[:, 0::2] = np.sin(position * frequency)
    table[:, 1::2] = np.cos(position * frequency[: d_model // 2])
    return table.astype(np.float32)
