"""F.linear: the affine map of nn.Linear (its Function is ops/linear.py's Addmm)."""
from __future__ import annotations

from minigrad.amp.cast_policy import autocast_op
from minigrad.ops.linear import Addmm
from minigrad.tensor import Tensor


@autocast_op("linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """y = x @ W^T + b, with W of shape (out_features, in_features)."""
    if input.ndim == 0 or weight.ndim != 2 or input.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"linear: input of shape {tuple(input.shape)} and weight of shape "
            f"{tuple(weight.shape)} do not fit (expected input.shape[-1] == weight.shape[1] "
            "and a 2-D weight)")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(
            f"linear: bias of shape {tuple(bias.shape)} does not fit a weight of shape "
            f"{tuple(weight.shape)} (expected ({weight.shape[0]},))")
    inputs = (input, weight) if bias is None else (input, weight, bias)
    return Addmm.apply(*inputs)
