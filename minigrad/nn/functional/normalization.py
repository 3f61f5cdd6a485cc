"""Layer normalisation as one fused Function (forward: one kernel for mean, 1/std and the
output; first-order backward: one kernel; second-order: the closed form below, in tensor
ops)."""
from __future__ import annotations

from minigrad import kernels
from minigrad.autograd import Function, is_grad_enabled
from minigrad.tensor import Tensor


class LayerNorm(Function):
    """xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps) over the last k dims;
    out = xhat * weight + bias.
    dx = rstd * (d - mean(d) - xhat * mean(d * xhat)) with d = g * weight,
    dweight = g * xhat, dbias = g (the engine sums these over the batch dims)."""

    def forward(self, x, weight=None, bias=None, num_dims=1, eps=1e-5):
        self.num_dims, self.dims = num_dims, tuple(range(-num_dims, 0))
        self.eps = eps
        out, mean, rstd = kernels.layer_norm(x, weight, bias, num_dims, eps)
        self.save_for_backward(x, mean, rstd, *(() if weight is None else (weight,)))
        return out

    def backward(self, grad):
        x, mean, rstd, *weight = self.saved
        needs = self.needs_input_grad
        if not is_grad_enabled():
            # first order only: one fused kernel (the same formulas, on arrays)
            grads = kernels.layer_norm_backward(grad.data, x.data, mean.data, rstd.data,
                                                weight[0].data if weight else None,
                                                self.num_dims)
            return tuple(Tensor._wrap(g, None) if need else None
                         for g, need in zip(grads, needs))
        # the gradient itself is being differentiated: mean and rstd depend on x
        mean = x.mean(self.dims, keepdim=True)
        centered = x - mean
        rstd = ((centered * centered).mean(self.dims, keepdim=True) + self.eps).rsqrt()
        xhat = (x - mean) * rstd
        d = grad * weight[0] if weight else grad
        dx = None
        if needs[0]:
            dx = rstd * (d - d.mean(self.dims, keepdim=True)
                         - xhat * (d * xhat).mean(self.dims, keepdim=True))
        dweight = grad * xhat if weight and needs[1] else None
        dbias = grad if len(needs) > 2 and needs[2] else None
        return (dx, dweight, dbias)[: len(needs)]


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
        weight = input.xp.ones(normalized_shape, dtype=input.data.dtype)
        weight = Tensor._wrap(weight, None)
    inputs = [t for t in (input, weight, bias) if t is not None]
    return LayerNorm.apply(*inputs, num_dims=len(normalized_shape), eps=eps)
