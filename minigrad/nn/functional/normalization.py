"""F.layer_norm (its Functions are in ops/normalization.py)."""
from __future__ import annotations

from minigrad.amp.cast_policy import autocast_op
from minigrad.ops.normalization import NativeLayerNorm
from minigrad.tensor import Tensor, constant


@autocast_op("layer_norm")
def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing dims `normalized_shape`, then scale and shift."""
    normalized_shape = (
        (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    )
    if tuple(input.shape[input.ndim - len(normalized_shape):]) != normalized_shape:
        raise RuntimeError(
            f"layer_norm: input of shape {tuple(input.shape)} does not end with "
            f"normalized_shape {normalized_shape}"
        )
    if bias is not None and weight is None:
        weight = constant(input.xp.ones(normalized_shape, dtype=input.array.dtype))
    inputs = [t for t in (input, weight, bias) if t is not None]
    return NativeLayerNorm.apply(*inputs, num_dims=len(normalized_shape), eps=eps)
