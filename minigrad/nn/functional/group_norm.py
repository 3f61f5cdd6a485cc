"""Group normalisation (PyTorch's F.group_norm): layer norm over each group of channels,
so it runs on layer norm's fused kernels (minigrad/nn/functional/normalization.py)."""
from __future__ import annotations

from minigrad.amp.cast_policy import autocast_op
from minigrad.nn.functional.normalization import layer_norm
from minigrad.tensor import Tensor


@autocast_op("group_norm")
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Split the C channels of input (N, C, *) into num_groups groups, normalise each
    sample's group over its channels and positions, then scale and shift per channel:

        out = (x - mean_group) / sqrt(var_group + eps) * weight[c] + bias[c]

    (var biased); weight and bias have shape (C,)."""
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: expected an input (N, C, *) of at least 2 dims, got "
                           f"shape {tuple(input.shape)}")
    channels = input.shape[1]
    if num_groups < 1 or channels % num_groups:
        raise RuntimeError(f"group_norm: expected the {channels} channels of the input of shape "
                           f"{tuple(input.shape)} to be divisible by num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (channels,):
            raise RuntimeError(f"group_norm: expected {name} of shape ({channels},) for input "
                               f"of shape {tuple(input.shape)}, got {tuple(t.shape)}")
    batch = input.shape[0]
    grouped = input.reshape(batch, num_groups, -1)
    out = layer_norm(grouped, grouped.shape[-1:], eps=eps).reshape(*input.shape)
    affine_shape = (1, channels) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(affine_shape)
    if bias is not None:
        out = out + bias.reshape(affine_shape)
    return out
