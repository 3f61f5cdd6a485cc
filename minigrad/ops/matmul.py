"""Matrix products with NumPy's batching rules; the array product goes through
minigrad.kernels, which picks BLAS or a Numba kernel."""
from __future__ import annotations

from minigrad import kernels
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.ops.operands import binary_operands
from minigrad.tensor_base import TensorBase


class MatMul(Function):
    """out = a @ b with NumPy's rules: batch dims broadcast, a 1-D `a` is a row vector and
    a 1-D `b` a column vector (the added axis is dropped from the result).
    On the operands as matrices: da = g @ b^T,  db = a^T @ g  (the engine sums broadcast
    batch dims back)."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        return kernels.matmul(a, b)

    def backward(self, grad):
        a, b = self.saved
        if a.ndim == 1 or b.ndim == 1:
            return self._vector_backward(a, b, grad)
        grad_a = grad @ b.transpose(-1, -2) if self.needs_input_grad[0] else None
        grad_b = None
        if self.needs_input_grad[1]:
            if b.ndim == 2 and a.ndim > 2:
                # a weight shared by every batch item: fold the batch into rows, one
                # (k, rows) @ (rows, n) product instead of a batched one summed afterwards
                rows_a, rows_grad = a.reshape(-1, a.shape[-1]), grad.reshape(-1, grad.shape[-1])
            else:
                rows_a, rows_grad = a, grad
            if b.ndim == 2 and b.array.flags.f_contiguous and not b.array.flags.c_contiguous:
                # b is a transposed matrix (x @ w.T): make its gradient (g^T a)^T, which is
                # laid out as b is, so that w's gradient comes out contiguous, uncopied
                grad_b = (rows_grad.transpose(-1, -2) @ rows_a).transpose(-1, -2)
            else:
                grad_b = rows_a.transpose(-1, -2) @ rows_grad
        return grad_a, grad_b

    def _vector_backward(self, a, b, grad):
        """The same rule with a vector operand, written without lifting the vector to a
        matrix (fewer ops): an outer product is a broadcast multiply.
            a . b:            da = g b,                  db = g a
            (..., m, k) @ b:  da[..., i, j] = g[..., i] b[j],
                              db[j] = sum_i g[..., i] a[..., i, j]
            a @ (..., k, n):  da[i] = sum_j b[..., i, j] g[..., j],
                              db[..., i, j] = a[i] g[..., j]
        (the engine sums the batch dims of the vector's gradient)"""
        needs_a, needs_b = self.needs_input_grad
        if a.ndim == 1 and b.ndim == 1:
            return (grad * b if needs_a else None), (grad * a if needs_b else None)
        grad_a = grad_b = None
        if b.ndim == 1:
            if needs_a:
                grad_a = grad.unsqueeze(-1) * b
            if needs_b:
                grad_b = grad @ a if grad.ndim == 1 else (grad.unsqueeze(-2) @ a).squeeze(-2)
        else:
            if needs_a:
                grad_a = b @ grad if grad.ndim == 1 else (b @ grad.unsqueeze(-1)).squeeze(-1)
            if needs_b:
                grad_b = a.unsqueeze(-1) * grad.unsqueeze(-2)
        return grad_a, grad_b


@autocast_op("matmul")
def matmul(a, b) -> TensorBase:
    """a @ b; a 1-D operand is treated as a row (left) or column (right) vector."""
    a, b = binary_operands(a, b)
    shape_a, shape_b = a.array.shape, b.array.shape
    if not shape_a or not shape_b:
        raise RuntimeError(
            f"matmul: both arguments need at least 1 dimension, got shapes {shape_a} "
            f"and {shape_b}"
        )
    inner_b = shape_b[-2 if len(shape_b) > 1 else 0]
    if shape_a[-1] != inner_b:
        raise RuntimeError(
            f"matmul: shapes {shape_a} and {shape_b} cannot be multiplied "
            f"(expected a.shape[-1] == b.shape[-2], got {shape_a[-1]} and {inner_b})"
        )
    return MatMul.apply(a, b)


@autocast_op("mm")
def mm(a: TensorBase, b: TensorBase) -> TensorBase:
    """Matrix product of two 2-D tensors (no broadcasting)."""
    _check_dims("mm", a, b, 2)
    return matmul(a, b)


@autocast_op("bmm")
def bmm(a: TensorBase, b: TensorBase) -> TensorBase:
    """Batched matrix product of (B, n, k) and (B, k, m) tensors (no broadcasting)."""
    _check_dims("bmm", a, b, 3)
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"bmm: batch sizes differ: shapes {tuple(a.shape)} and "
                           f"{tuple(b.shape)}")
    return matmul(a, b)


@autocast_op("dot")
def dot(a: TensorBase, b: TensorBase) -> TensorBase:
    """Inner product of two vectors of one length."""
    _check_dims("dot", a, b, 1)
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"dot: vectors of different lengths, shapes {tuple(a.shape)} and "
                           f"{tuple(b.shape)}")
    return matmul(a, b)


def outer(a: TensorBase, b: TensorBase) -> TensorBase:
    """out[i, j] = a[i] * b[j] for vectors a and b."""
    _check_dims("outer", a, b, 1)
    return a.unsqueeze(1) * b.unsqueeze(0)


def _check_dims(op: str, a: TensorBase, b: TensorBase, ndim: int) -> None:
    if a.ndim != ndim or b.ndim != ndim:
        raise RuntimeError(f"{op}: expected two {ndim}-D tensors, got shapes "
                           f"{tuple(a.shape)} and {tuple(b.shape)}")
