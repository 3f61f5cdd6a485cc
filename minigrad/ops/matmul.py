"""Matrix products with NumPy's batching rules; the array product goes through
minigrad.kernels, which picks BLAS or a Numba kernel."""
from __future__ import annotations

from minigrad import kernels
from minigrad.autograd import Function
from minigrad.ops.operands import binary_operands
from minigrad.tensor import Tensor


class MatMul(Function):
    """out = a @ b for a, b with ndim >= 2 (batch dims broadcast);
    da = g @ b^T,  db = a^T @ g  (the engine sums broadcast batch dims back)"""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return kernels.matmul(a, b)

    def backward(self, grad):
        a, b = self.saved
        grad_a = grad @ b.transpose(-1, -2) if self.needs_input_grad[0] else None
        grad_b = None
        if self.needs_input_grad[1]:
            if b.ndim == 2 and a.ndim > 2:
                # a weight shared by every batch item: fold the batch into rows, one
                # (k, rows) @ (rows, n) product instead of a batched one summed afterwards
                grad_b = a.reshape(-1, a.shape[-1]).T @ grad.reshape(-1, grad.shape[-1])
            else:
                grad_b = a.transpose(-1, -2) @ grad
        return grad_a, grad_b


def matmul(a, b) -> Tensor:
    """a @ b; a 1-D operand is treated as a row (left) or column (right) vector."""
    a, b = binary_operands(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"matmul: both arguments need at least 1 dimension, got shapes {tuple(a.shape)} "
            f"and {tuple(b.shape)}"
        )
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise RuntimeError(
            f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
            f"(expected a.shape[-1] == b.shape[-2], got {a.shape[-1]} and "
            f"{b.shape[-2 if b.ndim > 1 else 0]})"
        )
    if a.ndim == 1 and b.ndim == 1:
        return MatMul.apply(a.unsqueeze(0), b.unsqueeze(1)).reshape(())
    if a.ndim == 1:
        return MatMul.apply(a.unsqueeze(0), b).squeeze(-2)
    if b.ndim == 1:
        return MatMul.apply(a, b.unsqueeze(1)).squeeze(-1)
    return MatMul.apply(a, b)
