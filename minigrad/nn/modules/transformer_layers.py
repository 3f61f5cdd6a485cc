"""TransformerEncoderLayer and TransformerDecoderLayer: attention and feed-forward blocks,
each inside a residual connection with LayerNorm, as PyTorch builds and names them."""
from __future__ import annotations

from collections.abc import Callable

from minigrad.nn.functional.activation import gelu, relu
from minigrad.nn.modules.dropout import Dropout
from minigrad.nn.modules.linear import Linear
from minigrad.nn.modules.module import Module
from minigrad.nn.modules.multihead_attention import MultiheadAttention
from minigrad.nn.modules.normalization import LayerNorm
from minigrad.tensor import Tensor


class _FeedForwardLayer(Module):
    """What both layers share: the position-wise feed-forward block
    FFN(x) = dropout(linear2(dropout(activation(linear1(x))))), its last dropout named by
    the layer, and the norm placement:
        post-norm (norm_first=False)  x = norm(x + block(x))
        pre-norm  (norm_first=True)   x = x + block(norm(x))"""

    def _add_feed_forward(self, d_model: int, dim_feedforward: int, dropout: float,
                          activation: str | Callable[[Tensor], Tensor], bias: bool,
                          factory: dict) -> None:
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.activation = _activation_function(activation)

    def _feed_forward(self, x: Tensor, output_dropout: Dropout) -> Tensor:
        return output_dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def _residual(self, x: Tensor, norm: LayerNorm, block: Callable[[Tensor], Tensor]) -> Tensor:
        if self.norm_first:
            return x + block(norm(x))
        return norm(x + block(x))


class TransformerEncoderLayer(_FeedForwardLayer):
    """Self-attention then feed-forward, each a residual block (see _FeedForwardLayer):
    src (S, N, E), (N, S, E) with batch_first, or unbatched (S, E) -> the same shape.
    Submodules, as PyTorch names them: self_attn, linear1, dropout, linear2, norm1, norm2,
    dropout1, dropout2."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self._add_feed_forward(d_model, dim_feedforward, dropout, activation, bias, factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """Masks as in MultiheadAttention: src_mask (S, S) or (N * nhead, S, S),
        src_key_padding_mask (N, S); bool True = may not attend, float = added."""
        def self_attention(x: Tensor) -> Tensor:
            out, _ = self.self_attn(x, x, x, attn_mask=src_mask,
                                    key_padding_mask=src_key_padding_mask,
                                    need_weights=False, is_causal=is_causal)
            return self.dropout1(out)

        x = self._residual(src, self.norm1, self_attention)
        return self._residual(x, self.norm2, lambda y: self._feed_forward(y, self.dropout2))


class TransformerDecoderLayer(_FeedForwardLayer):
    """Self-attention over tgt, attention from tgt to the encoder's output `memory`, then
    feed-forward, each a residual block (see _FeedForwardLayer): tgt (T, N, E), memory
    (S, N, E) (batch first with batch_first, or unbatched (T, E), (S, E)) -> tgt's shape.
    Submodules, as PyTorch names them: self_attn, multihead_attn, linear1, dropout,
    linear2, norm1, norm2, norm3, dropout1, dropout2, dropout3."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **factory)
        self._add_feed_forward(d_model, dim_feedforward, dropout, activation, bias, factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """tgt_mask (T, T) (usually Transformer.generate_square_subsequent_mask(T)),
        memory_mask (T, S), key padding masks (N, T) and (N, S); as in MultiheadAttention."""
        def self_attention(x: Tensor) -> Tensor:
            out, _ = self.self_attn(x, x, x, attn_mask=tgt_mask,
                                    key_padding_mask=tgt_key_padding_mask,
                                    need_weights=False, is_causal=tgt_is_causal)
            return self.dropout1(out)

        def memory_attention(x: Tensor) -> Tensor:
            out, _ = self.multihead_attn(x, memory, memory, attn_mask=memory_mask,
                                         key_padding_mask=memory_key_padding_mask,
                                         need_weights=False, is_causal=memory_is_causal)
            return self.dropout2(out)

        x = self._residual(tgt, self.norm1, self_attention)
        x = self._residual(x, self.norm2, memory_attention)
        return self._residual(x, self.norm3, lambda y: self._feed_forward(y, self.dropout3))


def _activation_function(activation: str | Callable[[Tensor], Tensor]) -> Callable:
    """"relu" or "gelu" as F.relu / F.gelu; a callable (function or Module) as is."""
    if callable(activation):
        return activation
    if activation == "relu":
        return relu
    if activation == "gelu":
        return gelu
    raise RuntimeError(f"Transformer layer: activation should be relu/gelu or a callable, "
                       f"not {activation!r}")
