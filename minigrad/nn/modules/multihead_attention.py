"""MultiheadAttention: PyTorch's multi-head attention layer, with its packed in-projection,
its masks and its state_dict names, so that weights load both ways."""
from __future__ import annotations

from minigrad import creation
from minigrad.nn import init
from minigrad.nn.functional.attention import attention
from minigrad.nn.functional.linear import linear
from minigrad.nn.functional.padding import pad
from minigrad.nn.modules.linear import Linear
from minigrad.nn.modules.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.ops import cat
from minigrad.tensor import Tensor


class MultiheadAttention(Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O + b_O, with
    head_i = softmax(q_i k_i^T / sqrt(head_dim) + mask) v_i,  head_dim = embed_dim / h,
    q = Q W_q^T + b_q, k = K W_k^T + b_k, v = V W_v^T + b_v, each split into h heads.

    Inputs are (L, N, E) queries and (S, N, kdim) / (S, N, vdim) keys and values, or
    (N, L, E) ... with batch_first=True, or unbatched (L, E), (S, kdim), (S, vdim).
    Parameters, as PyTorch names them: in_proj_weight (3E, E) stacks W_q, W_k, W_v (or
    q_proj_weight, k_proj_weight, v_proj_weight when kdim or vdim differ from E),
    in_proj_bias (3E,), out_proj (a Linear E -> E), bias_k and bias_v (1, 1, E) with
    add_bias_kv. `dropout` acts on the attention weights in training mode.

    forward returns (output, weights): output in the layout of query; weights, when
    need_weights, are the attention probabilities before dropout, (N, L, S) averaged over
    the heads or (N, h, L, S) with average_attn_weights=False (PyTorch returns them after
    dropout in training mode). A query that may attend to no key gets all-zero weights
    and output out_proj.bias, where PyTorch gives NaN.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None,
                 dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                "MultiheadAttention: embed_dim and num_heads must be greater than 0, got "
                f"embed_dim={embed_dim} and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise AssertionError(
                f"MultiheadAttention: embed_dim must be divisible by num_heads, got "
                f"embed_dim={embed_dim} and num_heads={num_heads}")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.add_zero_attn = add_zero_attn

        def empty(*shape):
            return Parameter(creation.zeros(*shape, dtype=dtype, device=device))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = empty(embed_dim, embed_dim)
            self.k_proj_weight = empty(embed_dim, self.kdim)
            self.v_proj_weight = empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = empty(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = empty(1, 1, embed_dim)
            self.bias_v = empty(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's: Xavier-uniform in-projections (in_proj_weight as one (3E, E)
        matrix), zero biases, Xavier-normal bias_k/v (out_proj.weight keeps Linear's
        initialisation)."""
        packed = (self.in_proj_weight,) if self._qkv_same_embed_dim else ()
        for weight in packed or self._in_projection_weights():
            init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _in_projection_weights(self) -> tuple[Tensor, Tensor, Tensor]:
        """(W_q, W_k, W_v), each (embed_dim, its input's features)."""
        if self._qkv_same_embed_dim:
            return self.in_proj_weight.chunk(3)
        return self.q_proj_weight, self.k_proj_weight, self.v_proj_weight

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """key_padding_mask (N, S) or (S,) unbatched: True (bool) marks a key to ignore,
        a float mask is added to the scores. attn_mask (L, S) or (N * num_heads, L, S):
        likewise, True = may not attend. is_causal is a hint that attn_mask is the causal
        mask; it needs attn_mask, which is what is applied."""
        batched = self._check_inputs(query, key, value, key_padding_mask, attn_mask)
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "MultiheadAttention: is_causal=True needs attn_mask as well (it is only a "
                "hint); make one with nn.Transformer.generate_square_subsequent_mask")
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        output, weights = self._attend(query, key, value, key_padding_mask, attn_mask)
        if not need_weights:
            weights = None
        elif average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            output = output.squeeze(0)
            weights = None if weights is None else weights.squeeze(0)
        elif not self.batch_first:
            output = output.transpose(0, 1)
        return output, weights

    def _attend(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None,
                attn_mask: Tensor | None) -> tuple[Tensor, Tensor]:
        """Batch-first (N, L, E), (N, S, kdim), (N, S, vdim) -> output (N, L, E) and the
        weights (N, h, L, S'), S' counting the keys bias_k and add_zero_attn append."""
        batch, query_length, _ = query.shape
        biases = (None,) * 3 if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        q, k, v = (linear(x, w, b) for x, w, b in
                   zip((query, key, value), self._in_projection_weights(), biases))
        mask = self._additive_mask(key_padding_mask, attn_mask, query.dtype, batch)
        extra_keys = 0
        if self.bias_k is not None:
            k = cat([k, self.bias_k.expand(batch, 1, self.embed_dim)], 1)
            v = cat([v, self.bias_v.expand(batch, 1, self.embed_dim)], 1)
            extra_keys += 1
        q, k, v = (self._split_heads(x) for x in (q, k, v))
        if self.add_zero_attn:
            zeros = creation.zeros(*k.shape[:2], 1, self.head_dim, dtype=k.dtype,
                                   device=k.device)
            k, v = cat([k, zeros], 2), cat([v, zeros], 2)
            extra_keys += 1
        if mask is not None and extra_keys:
            mask = pad(mask, (0, extra_keys))  # every appended key may be attended to
        heads, weights = attention(q, k, v, mask, self.dropout, self.training)
        merged = heads.transpose(1, 2).reshape(batch, query_length, self.embed_dim)
        return self.out_proj(merged), weights

    def _split_heads(self, x: Tensor) -> Tensor:
        """(N, length, E) -> (N, num_heads, length, head_dim)"""
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def _additive_mask(self, key_padding_mask: Tensor | None, attn_mask: Tensor | None,
                       dtype, batch: int) -> Tensor | None:
        """The sum of both masks as one float mask broadcastable to (N, h, L, S): 0 where a
        query may attend, -inf (bool True) or the mask's own value where given."""
        mask = None
        if attn_mask is not None:
            attn_mask = _as_additive(attn_mask, dtype)
            if attn_mask.ndim == 3:  # (N * h, L, S), batch-major as PyTorch lays it out
                attn_mask = attn_mask.reshape(batch, self.num_heads, *attn_mask.shape[1:])
            mask = attn_mask
        if key_padding_mask is not None:
            padding = _as_additive(key_padding_mask, dtype)
            padding = padding.reshape(batch, 1, 1, padding.shape[-1])
            mask = padding if mask is None else mask + padding
        return mask

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor,
                      key_padding_mask: Tensor | None, attn_mask: Tensor | None) -> bool:
        """Raise on inputs whose ranks, sizes or mask shapes do not fit; True if batched."""
        shapes = (f"query {tuple(query.shape)}, key {tuple(key.shape)} and value "
                  f"{tuple(value.shape)}")
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise AssertionError(
                f"MultiheadAttention: expected 3-D (batched) or 2-D (unbatched) query, key "
                f"and value of the same rank, got {shapes}")
        batched = query.ndim == 3
        batch_dim = 0 if self.batch_first else 1
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(
                f"MultiheadAttention: was expecting embedding dimension of {self.embed_dim}, "
                f"but got query {tuple(query.shape)}")
        if key.shape[:-1] != value.shape[:-1]:
            raise AssertionError(
                f"MultiheadAttention: key and value need the same batch size and sequence "
                f"length, got {shapes}")
        if batched and key.shape[batch_dim] != query.shape[batch_dim]:
            raise RuntimeError(
                f"MultiheadAttention: query and key need the same batch size, got {shapes} "
                f"(batch_first={self.batch_first})")
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise RuntimeError(
                f"MultiheadAttention: expected key features {self.kdim} and value features "
                f"{self.vdim} (kdim, vdim), got {shapes}")
        batch = query.shape[batch_dim] if batched else 1
        seq_dim = (1 if self.batch_first else 0) if batched else 0
        query_length, key_length = query.shape[seq_dim], key.shape[seq_dim]
        if key_padding_mask is not None:
            _check_mask_dtype(key_padding_mask, "key_padding_mask")
            expected = (batch, key_length) if batched else (key_length,)
            if tuple(key_padding_mask.shape) != expected:
                raise AssertionError(
                    f"MultiheadAttention: key_padding_mask of shape "
                    f"{tuple(key_padding_mask.shape)} does not fit {shapes} "
                    f"(expected {expected})")
        if attn_mask is not None:
            _check_mask_dtype(attn_mask, "attn_mask")
            expected_2d = (query_length, key_length)
            expected_3d = (batch * self.num_heads, query_length, key_length)
            if tuple(attn_mask.shape) not in (expected_2d, expected_3d):
                raise RuntimeError(
                    f"MultiheadAttention: the shape of attn_mask is "
                    f"{tuple(attn_mask.shape)}, but should be {expected_2d} or "
                    f"{expected_3d} (batch * num_heads, L, S) for {shapes}")
        return batched


def _check_mask_dtype(mask: Tensor, name: str) -> None:
    if mask.dtype.name != "bool" and not mask.dtype.is_floating_point:
        raise AssertionError(
            f"MultiheadAttention: only bool and floating types of {name} are supported, "
            f"got {mask.dtype}")


def _as_additive(mask: Tensor, dtype) -> Tensor:
    """A bool mask (True = may not attend) as 0 / -inf of `dtype`; a float mask as is."""
    if mask.dtype.name != "bool":
        return mask
    return creation.zeros_like(mask, dtype=dtype).masked_fill(mask, float("-inf"))
