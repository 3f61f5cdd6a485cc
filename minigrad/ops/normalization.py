"""Layer normalisation as fused Functions: the forward is one kernel, and so is each
gradient; every gradient is a Function of its own, so the backward rule stays
differentiable (second and higher derivatives) without a second copy of the formula.
PyTorch's node for layer norm is NativeLayerNormBackward0, hence the names.

Notation, per row (the trailing dims that are normalised, n elements; <.> is the mean over
a row): mean = <x>, rstd = 1 / sqrt(<(x - mean)^2> + eps), xhat = (x - mean) * rstd.
"""
from __future__ import annotations

from minigrad import kernels
from minigrad.autograd.function import Function
from minigrad.tensor_base import TensorBase


class NativeLayerNorm(Function):
    """out = xhat * weight + bias.
    dx = NativeLayerNormBackward(g * weight),  dweight = g * xhat,  dbias = g
    (the engine sums dweight and dbias over the leading dims)."""

    def forward(self, x, weight=None, bias=None, num_dims=1, eps=1e-5):
        self.num_dims, self.eps = num_dims, eps
        out, self.mean, self.rstd = kernels.layer_norm(x, weight, bias, num_dims, eps)
        self.save_for_backward(x, *(() if weight is None else (weight,)))
        return out

    def backward(self, grad):
        x, *weight = self.saved
        needs = self.needs_input_grad
        rows = {"mean": self.mean, "rstd": self.rstd, "num_dims": self.num_dims,
                "eps": self.eps}
        dx = NativeLayerNormBackward.apply(grad, x, *weight, **rows) if needs[0] else None
        if not weight:
            return dx
        dweight = NativeLayerNormWeightGrad.apply(grad, x, **rows) if needs[1] else None
        return (dx, dweight, grad)[: len(needs)]


class NativeLayerNormBackward(Function):
    """The input gradient of layer norm: with d = g * weight (g without a weight),
        dx = rstd * (d - <d> - xhat <d xhat>).
    Its own gradients, for an upstream h (the operator above is self-adjoint in d):
        dd = NativeLayerNormBackward(h)  (so dg = weight * dd, dweight = g * dd),
        dx = rstd^2 ((3 <d xhat><h xhat> - <d h> + <d><h>) xhat
                     - <h xhat> (d - <d>) - <d xhat> (h - <h>))."""

    def forward(self, g, x, weight=None, mean=None, rstd=None, num_dims=1, eps=1e-5):
        self.rows = {"mean": mean, "rstd": rstd, "num_dims": num_dims, "eps": eps}
        self.save_for_backward(g, x, *(() if weight is None else (weight,)))
        dx, _, _ = kernels.layer_norm_backward(g, x, mean, rstd, weight, num_dims)
        return dx

    def backward(self, h):
        g, x, *weight = self.saved
        needs = self.needs_input_grad
        needs_weight = bool(weight) and needs[2]
        grad_d = NativeLayerNormBackward.apply(h, x, **self.rows) if needs[0] or needs_weight \
            else None
        grad_g = (grad_d * weight[0] if weight else grad_d) if needs[0] else None
        d = g * weight[0] if weight else g
        grad_x = _input_grad_of_input_grad(h, d, x, self.rows) if needs[1] else None
        grad_weight = g * grad_d if needs_weight else None
        return (grad_g, grad_x, grad_weight)[: len(needs)]


class NativeLayerNormWeightGrad(Function):
    """dweight = sum over the leading dims of g * xhat.
    Its own gradients: dg = h * xhat,  dx = NativeLayerNormBackward(g * h) (with no weight)."""

    def forward(self, g, x, mean=None, rstd=None, num_dims=1, eps=1e-5):
        self.rows = {"mean": mean, "rstd": rstd, "num_dims": num_dims, "eps": eps}
        self.save_for_backward(g, x)
        return kernels.layer_norm_weight_grad(g, x, mean, rstd, num_dims)

    def backward(self, h):
        g, x = self.saved
        needs = self.needs_input_grad
        grad_g = h * _normalized(x, self.rows) if needs[0] else None
        grad_x = NativeLayerNormBackward.apply(g * h, x, **self.rows) if needs[1] else None
        return grad_g, grad_x


def _normalized(x: TensorBase, rows: dict) -> TensorBase:
    """xhat in tensor ops, so that it depends on x in the graph (for higher derivatives)."""
    dims = tuple(range(-rows["num_dims"], 0))
    centered = x - x.mean(dims, keepdim=True)
    return centered * _rstd(centered, dims, rows["eps"])


def _rstd(centered: TensorBase, dims: tuple, eps: float) -> TensorBase:
    return ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()


def _input_grad_of_input_grad(h: TensorBase, d: TensorBase, x: TensorBase,
                              rows: dict) -> TensorBase:
    """The x-part of NativeLayerNormBackward's gradient (see its docstring), in tensor ops."""
    dims = tuple(range(-rows["num_dims"], 0))

    def row_mean(t: TensorBase) -> TensorBase:
        return t.mean(dims, keepdim=True)

    centered = x - row_mean(x)
    rstd = _rstd(centered, dims, rows["eps"])
    xhat = centered * rstd
    d_xhat, h_xhat, mean_d, mean_h = row_mean(d * xhat), row_mean(h * xhat), row_mean(d), \
        row_mean(h)
    coefficient = d_xhat * h_xhat * 3 - row_mean(d * h) + mean_d * mean_h
    return rstd * rstd * (coefficient * xhat - h_xhat * (d - mean_d) - d_xhat * (h - mean_h))
