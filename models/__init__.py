"""The Transformer of "Attention Is All You Need", built only from minigrad ops and layers,
with greedy decoding and beam search over a KV cache.

    from models import Transformer, greedy_decode, beam_search
"""
from models.attention import MultiHeadAttention
from models.cache import DecoderCache, KVCache
from models.decoding import Hypothesis, beam_search, greedy_decode
from models.embedding import PositionalEncoding, TokenEmbedding
from models.feedforward import PositionwiseFeedForward
from models.layers import DecoderLayer, EncoderLayer, Residual
from models.masks import causal_mask, padding_mask
from models.transformer import Decoder, Encoder, Transformer

__all__ = [
    "DecoderCache", "Decoder", "DecoderLayer", "Encoder", "EncoderLayer", "Hypothesis",
    "KVCache", "MultiHeadAttention", "PositionalEncoding", "PositionwiseFeedForward",
    "Residual", "TokenEmbedding", "Transformer", "beam_search", "causal_mask",
    "greedy_decode", "padding_mask",
]
