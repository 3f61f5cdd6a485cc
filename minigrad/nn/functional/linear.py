"""The affine map of nn.Linear."""
from __future__ import annotations

from minigrad.tensor import Tensor


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """y = x @ W^T + b, with W of shape (out_features, in_features)."""
    out = input @ weight.T
    return out if bias is None else out + bias
