"""The position-wise feed-forward network of every encoder and decoder layer."""
from __future__ import annotations

import minigrad as mg
from minigrad import nn


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, the same two layers at every position:
    (batch, len, d_model) -> (batch, len, dim_feedforward) -> (batch, len, d_model).
    Dropout on the hidden activations, as in PyTorch's Transformer layers."""

    def __init__(self, d_model: int, dim_feedforward: int, dropout: float = 0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: mg.Tensor) -> mg.Tensor:
        return self.linear2(self.dropout(self.linear1(x).relu()))
