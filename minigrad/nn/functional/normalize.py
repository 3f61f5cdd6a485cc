"""normalize: rescale slices of a tensor to unit p-norm (PyTorch's F.normalize)."""
from __future__ import annotations

from minigrad.ops.norms import vector_norm
from minigrad.ops.operands import normalize_dims
from minigrad.tensor import Tensor


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """input / max(||input||_p, eps) along dim: each slice scaled to unit p-norm (slices
    of norm below eps are divided by eps instead, so zeros stay zeros)."""
    if out is not None:
        raise TypeError("normalize: out= is not supported; use the returned tensor")
    if not input.dtype.is_floating_point:
        raise TypeError(f"normalize: expected a floating-point tensor, got {input.dtype}")
    if not (p > 0):
        raise ValueError(f"normalize: p must be a positive number or inf, got {p}")
    dims = normalize_dims(dim, input.ndim, "normalize")
    return input / vector_norm(input, float(p), dims, keepdim=True).clamp(min=eps)
