"""Norms: linalg.vector_norm (one Function), linalg.matrix_norm and linalg.norm built on
it, and the older torch.norm / Tensor.norm, as PyTorch defines each.

For ord p over the reduced elements x:

    p finite, nonzero   (sum |x|^p)^(1/p)
    p = inf / -inf      max |x| / min |x|
    p = 0               the number of nonzero elements

Matrix norms: "fro" is the 2-norm of all the matrix's elements; 1 / -1 the largest /
smallest column sum of |A|, inf / -inf the largest / smallest row sum. The spectral and
nuclear norms (2, -2, "nuc") need singular values, which minigrad does not compute.
float16 norms are computed in float32 and returned as float16.
"""
from __future__ import annotations

import math

from minigrad import dtypes
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.ops.operands import normalize_dim
from minigrad.ops.reduce import amax, amin
from minigrad.ops.select import where
from minigrad.tensor_base import TensorBase


class LinalgVectorNorm(Function):
    """out = (sum over dims of |x|^p)^(1/p), max |x| (p = inf), min |x| (p = -inf), or
    the count of nonzeros (p = 0). With s = sign(x):
        p >= 1:     dx = g s |x|^(p-1) / out^(p-1)   (0 where out = 0)
        p < 1:      dx = g s |x|^(p-1) out^(1-p)     (0 where x = 0)
        p = +-inf:  dx = g s / k at the k elements with |x| = out, 0 elsewhere
        p = 0:      no gradient (a count)"""

    def forward(self, x, ord, dims, keepdim):
        xp = array_module(x)
        self.ord, self.dims = ord, dims
        magnitude = xp.abs(x)
        if ord == math.inf:
            kept = magnitude.max(axis=dims, keepdims=True)
        elif ord == -math.inf:
            kept = magnitude.min(axis=dims, keepdims=True)
        elif ord == 0:
            kept = (x != 0).sum(axis=dims, keepdims=True).astype(x.dtype)
        elif ord == 1:
            kept = magnitude.sum(axis=dims, keepdims=True)
        elif ord == 2:
            kept = xp.sqrt((x * x).sum(axis=dims, keepdims=True))
        else:
            kept = (magnitude**ord).sum(axis=dims, keepdims=True) ** (1 / ord)
        self.kept_shape = kept.shape
        out = kept if keepdim else kept.reshape(_reduced_shape(x.shape, dims))
        self.save_for_backward(x, out)
        return out

    def backward(self, grad):
        if self.ord == 0:
            return None
        x, out = self.saved
        p = self.ord
        grad, out = grad.reshape(self.kept_shape), out.reshape(self.kept_shape)
        sign = x._wrap(x.xp.sign(x.array))  # a constant: its derivative is 0
        if math.isinf(p):
            is_extreme = x.xp.abs(x.array) == out.array
            share = is_extreme / is_extreme.sum(axis=self.dims, keepdims=True)
            return grad * sign * x._wrap(share.astype(x.array.dtype, copy=False))
        if p < 1:
            nonzero = x.array != 0
            magnitude = where(nonzero, where(nonzero, x.abs(), 1.0) ** (p - 1), 0.0)
            return grad * sign * magnitude * out ** (1 - p)
        zero = out.array == 0
        scale = where(zero, 0.0, grad / where(zero, 1.0, out) ** (p - 1))
        return scale * (x if p == 2 else sign * x.abs() ** (p - 1))


@autocast_op("linalg_vector_norm")
def vector_norm(x: TensorBase, ord=2, dim=None, keepdim: bool = False, *,  # noqa: A002
                dtype=None) -> TensorBase:
    """The ord-norm of x's elements over dim (an int or a tuple; None or () for all),
    ord any number (inf, -inf and 0 included); dtype converts x first (floating only)."""
    op = "linalg.vector_norm"
    if not isinstance(ord, (int, float)) or isinstance(ord, bool):
        raise TypeError(f"{op}: ord must be a number, got {ord!r}")
    x = _norm_input(x, dtype, op)
    dims = None if dim is None or dim == () else _dims(dim, x.ndim, op)
    reduced = x.shape if dims is None else [x.shape[d] for d in dims]
    if (ord < 0 or ord == math.inf) and 0 in reduced:
        raise RuntimeError(f"{op}: cannot compute the {ord} norm over an empty dim (shape "
                           f"{tuple(x.shape)}): the operation has no identity")
    if x.dtype is dtypes.float16:
        kept = vector_norm(x.to(dtypes.float32), ord, dims, keepdim)
        return kept.to(dtypes.float16)
    return LinalgVectorNorm.apply(x, ord=float(ord), dims=dims, keepdim=keepdim)


@autocast_op("linalg_matrix_norm")
def matrix_norm(A: TensorBase, ord="fro", dim=(-2, -1), keepdim: bool = False, *,  # noqa: N803
                dtype=None) -> TensorBase:
    """The ord-norm of the matrices in the two dims `dim`: "fro", 1, -1, inf or -inf."""
    op = "linalg.matrix_norm"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: the input must have at least 2 dims, got shape "
                           f"{tuple(A.shape)}")
    if isinstance(dim, int) or len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple of dims, got {dim!r}")
    rows, cols = (normalize_dim(d, A.ndim, op) for d in dim)
    if rows == cols:
        raise RuntimeError(f"{op}: dim {rows} appears twice in dim={tuple(dim)}")
    if ord == "fro":
        return vector_norm(A, 2, (rows, cols), keepdim, dtype=dtype)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(
            f"{op}: ord={ord!r} needs singular values, which minigrad does not compute; "
            "ord='fro', 1, -1, inf and -inf are supported")
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"{op}: ord={ord!r} is not supported (expected 'fro', 'nuc', "
                           "1, -1, 2, -2, inf or -inf)")
    A = _norm_input(A, dtype, op)  # noqa: N806
    # 1: sums down each column (over rows), then the largest; inf: along each row
    summed, extreme = (rows, cols) if abs(ord) == 1 else (cols, rows)
    sums = A.abs().sum(summed, keepdim=True)
    out = (amax if ord > 0 else amin)(sums, extreme, keepdim=True)
    return out if keepdim else out.reshape(_reduced_shape(A.shape, (rows, cols)))


def linalg_norm(A: TensorBase, ord=None, dim=None, keepdim: bool = False, *,  # noqa: N803
                dtype=None) -> TensorBase:
    """linalg.norm: a vector norm over one dim, a matrix norm over two; with dim=None,
    the 2-norm of all elements when ord is None, else the norm of a 1-D (vector) or
    2-D (matrix) input."""
    op = "linalg.norm"
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(f"{op}: dim must hold 1 or 2 dims, got {dim!r}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (0, 1), keepdim, dtype=dtype)
    raise RuntimeError(f"{op}: with ord given and dim=None the input must be 1-D or 2-D, "
                       f"got shape {tuple(A.shape)}")


@autocast_op("norm")
def norm(input: TensorBase, p="fro", dim=None, keepdim: bool = False,  # noqa: A002
         dtype=None) -> TensorBase:
    """torch.norm and Tensor.norm: the vector p-norm over dim (all elements for None);
    "fro" is the 2-norm; "nuc" (and "fro" over more than 2 dims) is a matrix norm."""
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return vector_norm(input, 2, dim, keepdim, dtype=dtype)
        dims = tuple(range(input.ndim)) if dim is None else dim
        return matrix_norm(input, p, dims, keepdim, dtype=dtype)
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


def _norm_input(x: TensorBase, dtype, op: str) -> TensorBase:
    """x converted to dtype (floating, at least as wide as x's), or an error naming op."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point input, got {x.dtype} of shape "
                           f"{tuple(x.shape)}")
    if dtype is None:
        return x
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating_point or dtypes.promote_types(x.dtype, dtype) is not dtype:
        raise RuntimeError(f"{op}: dtype {dtype} must be floating and at least as wide as "
                           f"the input's {x.dtype}")
    return x.to(dtype)


def _dims(dim, ndim: int, op: str) -> tuple:
    """dim (an int or a sequence) as a sorted tuple of distinct dims."""
    dims = [normalize_dim(d, ndim, op) for d in ((dim,) if isinstance(dim, int) else dim)]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}: dim {dim!r} names a dim more than once")
    return tuple(sorted(dims))


def _reduced_shape(shape: tuple, dims) -> tuple:
    return () if dims is None else tuple(n for d, n in enumerate(shape) if d not in dims)
