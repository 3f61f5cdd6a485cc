"""A GPT laid out as minGPT lays it out, for any library with PyTorch's API (minigrad or
torch): bench_compile's second GPT.

What makes it minGPT-style rather than train.char_lm_model's Transformer: one Linear
projects to queries, keys and values at once and `split` cuts them apart; the causal mask
is a registered lower-triangular buffer, applied with `masked_fill(..., -inf)`; the GELU
is the tanh approximation written out, `x ** 3` through `pow(x, 3.0)`; attention weights,
residual branches and the embeddings each have their own dropout; learned position
embeddings; an untied output head without bias.
"""
from __future__ import annotations

import math


def mingpt_class(library):
    """The model class for `library` (the module `minigrad` or `torch`):
    `MinGPT(vocab, width, heads, layers, context, dropout)`, called on token ids
    (batch, length), returning logits (batch, length, vocab)."""
    nn = library.nn
    softmax = nn.functional.softmax

    class TanhGELU(nn.Module):
        """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"""

        def forward(self, x):
            inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * library.pow(x, 3.0))
            return 0.5 * x * (1.0 + library.tanh(inner))

    class CausalSelfAttention(nn.Module):
        def __init__(self, width: int, heads: int, context: int, dropout: float):
            super().__init__()
            self.qkv = nn.Linear(width, 3 * width)
            self.projection = nn.Linear(width, width)
            self.attention_dropout = nn.Dropout(dropout)
            self.residual_dropout = nn.Dropout(dropout)
            self.heads = heads
            causal = library.tril(library.ones(context, context))
            self.register_buffer("causal", causal.view(1, 1, context, context))

        def forward(self, x):
            batch, length, width = x.size()
            per_head = (batch, length, self.heads, width // self.heads)
            q, k, v = (t.view(*per_head).transpose(1, 2)
                       for t in self.qkv(x).split(width, dim=2))
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            hidden = self.causal[:, :, :length, :length] == 0
            weights = softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
            out = self.attention_dropout(weights) @ v
            out = out.transpose(1, 2).contiguous().view(batch, length, width)
            return self.residual_dropout(self.projection(out))

    class Block(nn.Module):
        def __init__(self, width: int, heads: int, context: int, dropout: float):
            super().__init__()
            self.attention_norm = nn.LayerNorm(width)
            self.attention = CausalSelfAttention(width, heads, context, dropout)
            self.feedforward_norm = nn.LayerNorm(width)
            self.feedforward = nn.Sequential(nn.Linear(width, 4 * width), TanhGELU(),
                                             nn.Linear(4 * width, width), nn.Dropout(dropout))

        def forward(self, x):
            x = x + self.attention(self.attention_norm(x))
            return x + self.feedforward(self.feedforward_norm(x))

    class MinGPT(nn.Module):
        def __init__(self, vocab: int, width: int, heads: int, layers: int, context: int,
                     dropout: float):
            super().__init__()
            self.tokens = nn.Embedding(vocab, width)
            self.positions = nn.Embedding(context, width)
            self.embedding_dropout = nn.Dropout(dropout)
            self.blocks = nn.ModuleList(Block(width, heads, context, dropout)
                                        for _ in range(layers))
            self.final_norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, ids):
            positions = library.arange(0, ids.size(1)).unsqueeze(0)
            x = self.embedding_dropout(self.tokens(ids) + self.positions(positions))
            for block in self.blocks:
                x = block(x)
            return self.head(self.final_norm(x))

    return MinGPT
