"""Diagonals: diagonal (a view of the elements (i, i + offset) of two dims), diag (a
vector's diagonal matrix, or a matrix's diagonal as a copy) and trace.

With offset k >= 0 the diagonal of a (rows, cols) pair of dims holds x[i, i + k] for
i < min(rows, cols - k); with k < 0 it holds x[i - k, i] for i < min(rows + k, cols).
"""
from __future__ import annotations

from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.ops.operands import normalize_dim
from minigrad.ops.shape import clone
from minigrad.tensor_base import TensorBase


class Diagonal(Function):
    """out[..., i] = x[..., i, i + offset] over dims (dim1, dim2), which become the last
    dim of out, a view of x's memory as in PyTorch (x.diagonal().fill_(0) writes into x);
    dx = zeros like x with g on that diagonal (DiagonalScatter)"""

    is_view = True

    def forward(self, x, offset=0, dim1=0, dim2=1):
        self.input_shape, self.offset, self.dims = x.shape, offset, (dim1, dim2)
        out = array_module(x).diagonal(x, offset, dim1, dim2)
        _writable_as(out, x)
        return out

    def backward(self, grad):
        return DiagonalScatter.apply(grad, shape=self.input_shape, offset=self.offset,
                                     dim1=self.dims[0], dim2=self.dims[1])


class DiagonalScatter(Function):
    """out = zeros(shape) holding x (whose last dim is the diagonal) on the diagonal
    (offset, dim1, dim2): the adjoint of Diagonal;  dx = diagonal(g)"""

    def forward(self, x, shape, offset=0, dim1=0, dim2=1):
        self.offset, self.dims = offset, (dim1, dim2)
        xp = array_module(x)
        out = xp.zeros(shape, dtype=x.dtype)
        # the two dims last (a view of out), where (rows, cols) pick the diagonal
        pairs = xp.moveaxis(out, (dim1, dim2), (-2, -1))
        steps = xp.arange(x.shape[-1])
        rows, cols = (steps, steps + offset) if offset >= 0 else (steps - offset, steps)
        pairs[..., rows, cols] = x
        return out

    def backward(self, grad):
        return Diagonal.apply(grad, offset=self.offset, dim1=self.dims[0], dim2=self.dims[1])


def diagonal(input: TensorBase, offset: int = 0, dim1: int = 0,  # noqa: A002  (torch's name)
             dim2: int = 1) -> TensorBase:
    """The diagonal (offset above it when positive, below when negative) of the matrices
    in dims dim1 and dim2, as a view; those dims go, and the diagonal is the last dim."""
    dim1 = normalize_dim(dim1, input.ndim, "diagonal")
    dim2 = normalize_dim(dim2, input.ndim, "diagonal")
    if dim1 == dim2:
        raise RuntimeError(f"diagonal: dim1 and dim2 must be different dims, both are {dim1} "
                           f"(input of shape {tuple(input.shape)})")
    return Diagonal.apply(input, offset=offset, dim1=dim1, dim2=dim2)


def diag(input: TensorBase, diagonal: int = 0) -> TensorBase:  # noqa: A002
    """A vector's square matrix, with the vector on its diagonal `diagonal` (above the
    main one when positive) and zeros elsewhere; or a copy of a matrix's diagonal."""
    if input.ndim == 1:
        size = input.shape[0] + abs(diagonal)
        return DiagonalScatter.apply(input, shape=(size, size), offset=diagonal)
    if input.ndim == 2:
        return clone(Diagonal.apply(input, offset=diagonal))
    raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got shape {tuple(input.shape)}")


def trace(input: TensorBase) -> TensorBase:  # noqa: A002
    """The sum of a matrix's main diagonal."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix (2-D), got shape {tuple(input.shape)}")
    return Diagonal.apply(input).sum()


def _writable_as(view, base) -> None:
    """NumPy hands out diagonals read-only (CuPy's are writable, and its flags have no
    `writeable`); PyTorch's diagonal is a view users write through, so the view takes
    the writability of the array it views."""
    flags = view.flags
    if getattr(flags, "writeable", True) is False and base.flags.writeable:
        flags.writeable = True
