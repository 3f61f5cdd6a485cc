"""The Transformer of PyTorch's nn: encoder and decoder stacks of the layers in
transformer_layers.py, and the encoder-decoder model that joins them."""
from __future__ import annotations

import copy
from collections.abc import Callable

from minigrad import creation
from minigrad.nn import init
from minigrad.nn.functional.activation import relu
from minigrad.nn.modules.container import ModuleList
from minigrad.nn.modules.module import Module
from minigrad.nn.modules.normalization import LayerNorm
from minigrad.nn.modules.transformer_layers import TransformerDecoderLayer, TransformerEncoderLayer
from minigrad.ops import triu
from minigrad.tensor import Tensor

# PyTorch keeps the layers here too; they are defined in transformer_layers.py
__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]


class TransformerEncoder(Module):
    """num_layers copies of `encoder_layer` (deep copies: same initial weights, trained
    apart), named layers.0, layers.1, ..., then `norm` if given. enable_nested_tensor and
    mask_check are accepted for ported code; minigrad has no nested tensors."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """Every layer gets the same masks (see TransformerEncoderLayer.forward)."""
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        return output if self.norm is None else self.norm(output)


class TransformerDecoder(Module):
    """num_layers copies of `decoder_layer`, named layers.0, layers.1, ..., then `norm` if
    given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """Every layer gets the same memory and masks (see TransformerDecoderLayer)."""
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """The encoder-decoder of "Attention Is All You Need" without embeddings or output
    projection, as torch.nn.Transformer: src (S, N, E) and tgt (T, N, E) (batch first with
    batch_first, or unbatched (S, E), (T, E)) -> (T, N, E), with E = d_model.

    Both stacks end in a LayerNorm (encoder.norm, decoder.norm), after post-norm layers
    too. custom_encoder / custom_decoder replace the stacks. Every parameter with more
    than one dimension is then re-drawn Xavier-uniform (PyTorch's _reset_parameters).
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = relu,
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_arguments = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                           batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_arguments, **factory), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_arguments, **factory), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self) -> None:
        for parameter in self.parameters():
            if parameter.ndim > 1:
                init.xavier_uniform_(parameter)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """memory = encoder(src, src_mask, src_key_padding_mask), then
        decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
        memory_key_padding_mask). Masks as in MultiheadAttention: bool True = may not
        attend, float = added to the scores; *_is_causal are hints that need the mask."""
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError(
                f"Transformer: the batch number of src and tgt must be equal, got src "
                f"{tuple(src.shape)} and tgt {tuple(tgt.shape)} (batch_first="
                f"{self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(
                f"Transformer: the feature number of src and tgt must be equal to d_model="
                f"{self.d_model}, got src {tuple(src.shape)} and tgt {tuple(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The (sz, sz) float causal mask: 0 on and below the diagonal, -inf above it, so
        position i attends to positions 0..i."""
        blocked = creation.full((sz, sz), float("-inf"), dtype=dtype, device=device)
        return triu(blocked, diagonal=1)


def _clones(layer: Module, count: int) -> ModuleList:
    return ModuleList([copy.deepcopy(layer) for _ in range(count)])
