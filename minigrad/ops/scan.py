"""Running sums and products along a dim: cumsum and cumprod."""
from __future__ import annotations

from minigrad import dtypes
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.ops.operands import normalize_dim
from minigrad.ops.rearrange import flip
from minigrad.ops.select import where
from minigrad.ops.shape import cat
from minigrad.tensor_base import TensorBase


class Cumsum(Function):
    """out_i = sum_{j <= i} x_j along a dim;  dx_i = sum_{j >= i} g_j (g summed from the end)"""

    def forward(self, x, axis):
        self.axis = axis
        return array_module(x).cumsum(x, axis=axis)

    def backward(self, grad):
        return _reverse_cumsum(grad, self.axis)


class Cumprod(Function):
    """out_i = prod_{j <= i} x_j along a dim;
    dx_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k, which is
    sum_{j >= i} g_j out_j / x_i where no out_j is 0 (no x_k is 0, and no product
    underflows); see _cumprod_grad_with_zeros for the rest"""

    def forward(self, x, axis):
        out = array_module(x).cumprod(x, axis=axis)
        self.save_for_backward(x, out)
        self.axis = axis
        return out

    def backward(self, grad):
        x, out = self.saved
        xp = x.xp
        if not bool((xp.abs(out.array) < xp.finfo(out.array.dtype).tiny).any()):
            return _reverse_cumsum(grad * out, self.axis) / x
        return _cumprod_grad_with_zeros(x, out, grad, self.axis)


@autocast_op("cumsum")
def cumsum(x: TensorBase, dim: int, dtype=None) -> TensorBase:
    """Running sums along dim; integer and bool inputs sum as int64 (as in PyTorch), float16
    in float32 (cast back)."""
    if dtype is None and x.dtype is dtypes.float16:
        return cumsum(x.float(), dim).half()
    return Cumsum.apply(_scan_input(x, dtype), axis=normalize_dim(dim, x.ndim, "cumsum"))


@autocast_op("cumprod")
def cumprod(x: TensorBase, dim: int, dtype=None) -> TensorBase:
    """Running products along dim; integer and bool inputs multiply as int64, float16 in
    float32 (cast back)."""
    if dtype is None and x.dtype is dtypes.float16:
        return cumprod(x.float(), dim).half()
    return Cumprod.apply(_scan_input(x, dtype), axis=normalize_dim(dim, x.ndim, "cumprod"))


def _scan_input(x: TensorBase, dtype) -> TensorBase:
    if dtype is not None:
        return x.to(dtypes.as_dtype(dtype))
    return x if x.dtype.is_floating_point else x.to(dtypes.int64)


def _reverse_cumsum(t: TensorBase, axis: int) -> TensorBase:
    """out_i = sum_{j >= i} t_j along axis."""
    if t.ndim == 0:
        return t
    return flip(cumsum(flip(t, axis), axis), axis)


def _cumprod_grad_with_zeros(x: TensorBase, out: TensorBase, grad: TensorBase,
                             axis: int) -> TensorBase:
    """dx_i = out_{i-1} * sum_{j >= i} g_j * P_ij with P_ij = prod_{i < k <= j} x_k, exact
    when x has zeros (where dividing out_j by x_i fails). P is the running product of the
    matrix M_ik = x_k for k > i and 1 otherwise: O(n^2) memory along the dim, used only
    when a zero makes the O(n) formula unusable."""
    if x.ndim == 0:
        return grad
    x, out, grad = (t.transpose(axis, -1) for t in (x, out, grad))
    size = x.shape[-1]
    xp = x.xp
    after = xp.triu(xp.ones((size, size), dtype=bool), 1)  # after[i, k]: k > i
    from_i = xp.triu(xp.ones((size, size), dtype=bool))  # from_i[i, j]: j >= i
    products = cumprod(where(after, x.unsqueeze(-2), 1.0), -1)  # P[..., i, j]
    weighted = where(from_i, grad.unsqueeze(-2) * products, 0.0)
    first = x._wrap(xp.ones(x.shape[:-1] + (1,), dtype=x.array.dtype))
    before = cat([first, out[..., :-1]], -1)  # out_{i-1}, and 1 for i = 0
    return (before * weighted.sum(-1)).transpose(axis, -1)
