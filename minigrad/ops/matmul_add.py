"""A matrix product added to a tensor: addmm (matrices) and baddbmm (batches of them),
out = beta * input + alpha * (a @ b), one Function each as in PyTorch."""
from __future__ import annotations

import numpy as np

from minigrad import kernels
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.tensor_base import TensorBase


class Addmm(Function):
    """out = beta * input + alpha * (a @ b), input broadcast to the product's shape and
    not read at all when beta = 0 (so NaN or inf there does not spread);
    dinput = beta g,  da = alpha g b^T,  db = alpha a^T g"""

    def forward(self, input, a, b, beta=1, alpha=1):  # noqa: A002
        self.save_for_backward(a, b)
        self.beta, self.alpha = beta, alpha
        out = kernels.matmul(a, b)
        if alpha != 1:
            out = out * alpha
        if beta != 0:
            out = out + (input if beta == 1 else input * beta)
        return out

    def backward(self, grad):
        a, b = self.saved
        needs_input, needs_a, needs_b = self.needs_input_grad
        grad_input = grad * self.beta if needs_input else None
        scaled = grad if self.alpha == 1 else grad * self.alpha
        grad_a = scaled @ b.transpose(-1, -2) if needs_a else None
        grad_b = a.transpose(-1, -2) @ scaled if needs_b else None
        return grad_input, grad_a, grad_b


class Baddbmm(Addmm):
    """The batched form, over (B, n, k) and (B, k, m) operands: the same rule"""


@autocast_op("addmm")
def addmm(input: TensorBase, mat1: TensorBase, mat2: TensorBase, *, beta=1,  # noqa: A002
          alpha=1) -> TensorBase:
    """beta * input + alpha * (mat1 @ mat2) for matrices (n, k) and (k, m), input
    broadcast to (n, m); with beta = 0 input is ignored (its gradient is 0)."""
    _check_operands("addmm", input, mat1, mat2, beta, alpha, ndim=2)
    return Addmm.apply(input, mat1, mat2, beta=beta, alpha=alpha)


@autocast_op("baddbmm")
def baddbmm(input: TensorBase, batch1: TensorBase, batch2: TensorBase, *, beta=1,  # noqa: A002
            alpha=1) -> TensorBase:
    """beta * input + alpha * (batch1 @ batch2) for batches (B, n, k) and (B, k, m) of
    matrices, input broadcast to (B, n, m); with beta = 0 input is ignored."""
    _check_operands("baddbmm", input, batch1, batch2, beta, alpha, ndim=3)
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"baddbmm: batch sizes differ: batch1 of shape "
                           f"{tuple(batch1.shape)}, batch2 of shape {tuple(batch2.shape)}")
    return Baddbmm.apply(input, batch1, batch2, beta=beta, alpha=alpha)


def _check_operands(op: str, input: TensorBase, a: TensorBase, b: TensorBase,  # noqa: A002
                    beta, alpha, ndim: int) -> None:
    """Shapes (a and b `ndim`-D and multipliable, input broadcasting to the product),
    one dtype for all three, and integer beta and alpha for integer tensors."""
    described = f"input {tuple(input.shape)}, {tuple(a.shape)} @ {tuple(b.shape)}"
    if a.ndim != ndim or b.ndim != ndim:
        raise RuntimeError(f"{op}: expected {ndim}-D matrix operands, got {described}")
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"{op}: the matrices cannot be multiplied ({described}: expected "
                           f"a.shape[-1] == b.shape[-2], got {a.shape[-1]} and "
                           f"{b.shape[-2]})")
    product = tuple(a.shape[:-1]) + (b.shape[-1],)
    try:
        fits = np.broadcast_shapes(tuple(input.shape), product) == product
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"{op}: input does not broadcast to the product's shape "
                           f"{product} ({described})")
    if not input.dtype == a.dtype == b.dtype:
        raise RuntimeError(f"{op}: expected one dtype for input and both matrices, got "
                           f"{input.dtype}, {a.dtype} and {b.dtype}")
    if not a.dtype.is_floating_point and not all(
            isinstance(s, int) for s in (beta, alpha)):
        raise RuntimeError(f"{op}: beta and alpha must be integers for {a.dtype} tensors, "
                           f"got beta={beta!r}, alpha={alpha!r}")
