"""mg.linalg: the names of torch.linalg that minigrad has.

    norm(A, ord=None, dim=None, keepdim=False, *, dtype=None)
    vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None)
    matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None)
    diagonal(A, *, offset=0, dim1=-2, dim2=-1)

The norms are in minigrad/ops/norms.py; diagonal is Tensor.diagonal with the last two
dims as its default.
"""
from __future__ import annotations

from minigrad.ops import diagonals
from minigrad.ops.norms import linalg_norm as norm
from minigrad.ops.norms import matrix_norm, vector_norm
from minigrad.tensor_base import TensorBase


def diagonal(A: TensorBase, *, offset: int = 0, dim1: int = -2,  # noqa: N803
             dim2: int = -1) -> TensorBase:
    """The diagonal of the matrices in dims dim1 and dim2 (the last two), as a view."""
    return diagonals.diagonal(A, offset, dim1, dim2)


__all__ = ["diagonal", "matrix_norm", "norm", "vector_norm"]
