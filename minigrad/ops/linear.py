"""The affine map of F.linear and nn.Linear, as one Function. PyTorch records it as addmm
(bias + x @ W^T), so its node prints as AddmmBackward0 here too."""
from __future__ import annotations

from minigrad import kernels
from minigrad.autograd.function import Function


class Addmm(Function):
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
