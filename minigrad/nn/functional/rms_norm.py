"""Root-mean-square normalisation (PyTorch's F.rms_norm), composed of differentiable
tensor ops."""
from __future__ import annotations

import numpy as np

from minigrad import dtypes
from minigrad.amp.cast_policy import autocast_op
from minigrad.tensor import Tensor


@autocast_op("rms_norm")
def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
             eps: float | None = None) -> Tensor:
    """Scale each row of the trailing dims `normalized_shape` to unit root mean square:

        out = x / sqrt(mean(x^2) + eps) * weight

    eps=None uses the machine epsilon of the input's dtype, as PyTorch does."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise RuntimeError(f"rms_norm: input of shape {tuple(input.shape)} does not end with "
                           f"normalized_shape {shape}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"rms_norm: expected weight of shape {shape}, got "
                           f"{tuple(weight.shape)}")
    if eps is None:
        eps = float(np.finfo(input.array.dtype).eps)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    # float16 squares overflow from |x| = 256: computed in float32 (as PyTorch does), the
    # result cast back
    x = input.float() if input.dtype is dtypes.float16 else input
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out if x is input else out.to(input.dtype)
