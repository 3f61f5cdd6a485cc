"""The affine map of nn.Linear, as one Function (PyTorch's addmm)."""
from __future__ import annotations

from minigrad import kernels
from minigrad.autograd import Function
from minigrad.tensor import Tensor


class Linear(Function):
    """y = x W^T + b over the last dim of x, with W (out, in) and b (out,) (optional).
    With the rows of x and of the upstream gradient g as matrices:
        dx = g W,   dW = g^T x,   db = the sum of g's rows
    One Function rather than a matmul and an add: the product gets the bias added in
    place, and backward sums db directly, with no broadcast to undo."""

    def forward(self, x, weight, bias=None):
        self.save_for_backward(x, weight)
        out = kernels.matmul(x, weight.T)
        if bias is not None:
            out += bias
        return out

    def backward(self, grad):
        x, weight = self.saved
        needs = self.needs_input_grad
        rows = grad.reshape(-1, grad.shape[-1])
        grad_x = grad @ weight if needs[0] else None
        # g^T x has W's layout (out, in), so the weight's gradient is contiguous
        grad_weight = rows.T @ x.reshape(-1, x.shape[-1]) if needs[1] else None
        grad_bias = rows.sum(0) if len(needs) > 2 and needs[2] else None
        return (grad_x, grad_weight, grad_bias)[: len(needs)]


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
    return Linear.apply(*inputs)
