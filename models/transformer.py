"""The encoder-decoder Transformer: embeddings, encoder and decoder stacks, and the final
Linear to target-vocabulary logits."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import minigrad as mg
from minigrad import nn
from models.attention import MultiHeadAttention
from models.cache import DecoderCache
from models.embedding import PositionalEncoding, TokenEmbedding
from models.layers import DecoderLayer, EncoderLayer
from models.masks import causal_mask, combine, padding_mask


class Encoder(nn.Module):
    """A stack of EncoderLayers, plus a final LayerNorm when pre-norm:
    x (batch, src_len, d_model), mask (batch, 1, 1, src_len) -> (batch, src_len, d_model)."""

    def __init__(self, num_layers: int, d_model: int, nhead: int, dim_feedforward: int,
                 dropout: float, norm_first: bool):
        super().__init__()
        self.layers = nn.ModuleList([
            EncoderLayer(d_model, nhead, dim_feedforward, dropout, norm_first)
            for _ in range(num_layers)
        ])
        # post-norm layers already end in a LayerNorm; pre-norm ones end in a residual sum
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(self, x: mg.Tensor, mask: mg.Tensor | None) -> mg.Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


class Decoder(nn.Module):
    """A stack of DecoderLayers, plus a final LayerNorm when pre-norm; see DecoderLayer for
    the shapes. `cache`, if given, holds every layer's keys and values."""

    def __init__(self, num_layers: int, d_model: int, nhead: int, dim_feedforward: int,
                 dropout: float, norm_first: bool):
        super().__init__()
        self.layers = nn.ModuleList([
            DecoderLayer(d_model, nhead, dim_feedforward, dropout, norm_first)
            for _ in range(num_layers)
        ])
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(self, x: mg.Tensor, memory: mg.Tensor, self_mask: mg.Tensor | None,
                memory_mask: mg.Tensor | None, cache: DecoderCache | None = None) -> mg.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, self_mask, memory_mask,
                      None if cache is None else cache.layer(i))
        return x if self.norm is None else self.norm(x)


class Transformer(nn.Module):
    """The model of "Attention Is All You Need" (post-norm by default, pre-norm with
    `norm_first=True`).

    src (batch, src_len) and tgt (batch, tgt_len) int64 token ids -> logits
    (batch, tgt_len, tgt_vocab). Padding masks are bool (batch, len), True at padding; by
    default they are `tokens == pad_id`. With `tie_target_embeddings` the output projection
    shares its weight matrix with the target embedding. Matrices get Xavier-uniform init.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 512, nhead: int = 8,
                 num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, norm_first: bool = False,
                 tie_target_embeddings: bool = False, pad_id: int = 0, max_len: int = 5000):
        super().__init__()
        self.pad_id = pad_id
        self.src_embed = TokenEmbedding(src_vocab, d_model)
        self.tgt_embed = TokenEmbedding(tgt_vocab, d_model)
        self.positional = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = Encoder(num_encoder_layers, d_model, nhead, dim_feedforward, dropout,
                               norm_first)
        self.decoder = Decoder(num_decoder_layers, d_model, nhead, dim_feedforward, dropout,
                               norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab)
        self._init_weights()
        if tie_target_embeddings:
            self.generator.weight = self.tgt_embed.embedding.weight

    def _init_weights(self) -> None:
        for parameter in self.parameters():
            if parameter.ndim > 1:
                nn.init.xavier_uniform_(parameter)

    def forward(self, src: mg.Tensor, tgt: mg.Tensor, src_pad_mask: mg.Tensor | None = None,
                tgt_pad_mask: mg.Tensor | None = None) -> mg.Tensor:
        """Teacher forcing: tgt is the shifted-right target; -> (batch, tgt_len, tgt_vocab)."""
        if src_pad_mask is None:
            src_pad_mask = src == self.pad_id
        if tgt_pad_mask is None:
            tgt_pad_mask = tgt == self.pad_id
        memory = self.encode(src, src_pad_mask)
        return self.decode(tgt, memory, src_pad_mask, tgt_pad_mask)

    def encode(self, src: mg.Tensor, src_pad_mask: mg.Tensor | None = None) -> mg.Tensor:
        """src (batch, src_len) -> memory (batch, src_len, d_model)."""
        if src_pad_mask is None:
            src_pad_mask = src == self.pad_id
        x = self.positional(self.src_embed(src))
        return self.encoder(x, padding_mask(src_pad_mask, x.dtype))

    def decode(self, tgt: mg.Tensor, memory: mg.Tensor, src_pad_mask: mg.Tensor | None,
               tgt_pad_mask: mg.Tensor | None = None,
               cache: DecoderCache | None = None) -> mg.Tensor:
        """tgt (batch, new_len) -> logits (batch, new_len, tgt_vocab).

        Without a cache tgt is the whole prefix. With one, tgt holds only the positions after
        the `cache.offset` already fed, which advances by new_len; tgt_pad_mask, if given,
        covers all cache.offset + new_len positions. src_pad_mask (batch, src_len) may be
        None when no source is padded."""
        offset = 0 if cache is None else cache.offset
        x = self.positional(self.tgt_embed(tgt), offset)
        new_len = tgt.shape[1]
        self_mask = causal_mask(new_len, offset + new_len, x.dtype, x.device)
        if tgt_pad_mask is not None:
            self_mask = combine(self_mask, padding_mask(tgt_pad_mask, x.dtype))
        memory_mask = None if src_pad_mask is None else padding_mask(src_pad_mask, x.dtype)
        x = self.decoder(x, memory, self_mask, memory_mask, cache)
        if cache is not None:
            cache.offset += new_len
        return self.generator(x)

    def new_cache(self) -> DecoderCache:
        """An empty KV cache for incremental decoding with `decode`."""
        return DecoderCache(len(self.decoder.layers))

    @contextmanager
    def keeping_attention_weights(self) -> Iterator[None]:
        """Inside the block every MultiHeadAttention keeps the attention probabilities of
        its last call, which `attention_weights()` returns; on leaving it the layers go
        back to keeping nothing (the default, free in training).

            with model.keeping_attention_weights():
                model(src, tgt)
            weights = model.attention_weights()
        """
        layers = [module for module in self.modules() if isinstance(module, MultiHeadAttention)]
        previous = [layer.keep_weights for layer in layers]
        for layer in layers:
            layer.keep_weights = True
        try:
            yield
        finally:
            for layer, keep in zip(layers, previous, strict=True):
                layer.keep_weights = keep

    def attention_weights(self) -> dict[str, mg.Tensor]:
        """The attention weights of the last forward run under `keeping_attention_weights`,
        (batch, heads, q_len, k_len), by layer: "encoder.{i}.self_attn",
        "decoder.{i}.self_attn", "decoder.{i}.cross_attn" (only the layers that ran, so a
        lone `decode` gives the decoder's)."""
        layers = {f"encoder.{i}.self_attn": layer.self_attn
                  for i, layer in enumerate(self.encoder.layers)}
        for i, layer in enumerate(self.decoder.layers):
            layers[f"decoder.{i}.self_attn"] = layer.self_attn
            layers[f"decoder.{i}.cross_attn"] = layer.cross_attn
        weights = {name: layer.weights for name, layer in layers.items()
                   if layer.weights is not None}
        if not weights:
            raise RuntimeError(
                "Transformer.attention_weights: the last forward kept no attention weights; "
                "run it inside `with model.keeping_attention_weights():`"
            )
        return weights
