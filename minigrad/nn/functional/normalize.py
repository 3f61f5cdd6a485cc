"""normalize: rescale slices of a tensor to unit p-norm (PyTorch's F.normalize)."""
from __future__ import annotations

import math

from minigrad import ops
from minigrad.autograd import Function
from minigrad.backend import array_module
from minigrad.ops.operands import normalize_dims
from minigrad.tensor import Tensor, constant


class VectorNorm(Function):
    """out = (sum |x|^p)^(1/p) over dims, kept as size 1 (max |x| for p = inf);
        dx = g sign(x) |x|^(p-1) / out^(p-1)   (p = 2: g x / out;  p = 1: g sign(x))
        p = inf: g sign(x) shared evenly by the elements with |x| = out
    and 0 where out = 0, as PyTorch's (the norm is not differentiable there)."""

    def forward(self, x, p=2.0, dims=None):
        xp = array_module(x)
        self.p, self.dims = p, dims
        magnitude = xp.abs(x)
        if p == math.inf:
            out = magnitude.max(axis=dims, keepdims=True)
        elif p == 2:
            out = xp.sqrt((x * x).sum(axis=dims, keepdims=True))
        elif p == 1:
            out = magnitude.sum(axis=dims, keepdims=True)
        else:
            out = ((magnitude**p).sum(axis=dims, keepdims=True)) ** (1 / p)
        self.save_for_backward(x, out)
        return out

    def backward(self, grad):
        x, out = self.saved
        xp, p = x.xp, self.p
        sign = xp.sign(x.data)
        if p == math.inf:
            at_max = (xp.abs(x.data) == out.data) & (out.data > 0)
            share = at_max / xp.maximum(at_max.sum(axis=self.dims, keepdims=True), 1)
            return grad * constant((sign * share).astype(x.data.dtype, copy=False))
        if p == 1:
            return grad * constant(sign)
        # where the norm is 0 every |x| is 0 too: dividing by 1 there gives the 0 we want
        safe_out = ops.where(out.data != 0, out, 1.0)
        if p == 2:
            return grad * x / safe_out
        return grad * constant(sign) * x.abs() ** (p - 1) / safe_out ** (p - 1)


def vector_norm(x: Tensor, p: float = 2.0, dim=None) -> Tensor:
    """The p-norm of x over dim (all dims when None), keeping reduced dims as size 1."""
    if not (p > 0):
        raise ValueError(f"normalize: p must be a positive number or inf, got {p}")
    dims = normalize_dims(dim, x.ndim, "normalize")
    return VectorNorm.apply(x, p=float(p), dims=dims)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """input / max(||input||_p, eps) along dim: each slice scaled to unit p-norm (slices
    of norm below eps are divided by eps instead, so zeros stay zeros)."""
    if out is not None:
        raise TypeError("normalize: out= is not supported; use the returned tensor")
    if not input.dtype.is_floating_point:
        raise TypeError(f"normalize: expected a floating-point tensor, got {input.dtype}")
    return input / vector_norm(input, p, dim).clamp(min=eps)
