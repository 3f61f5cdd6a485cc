"""Adaptive average pooling with PyTorch's semantics: adaptive_avg_pool1d/2d, as products
with constant bin-averaging matrices (so differentiable to any order through matmul)."""
from __future__ import annotations

from minigrad.amp.cast_policy import autocast_op
from minigrad.nn.functional.window_args import batched, size_tuple, unbatched
from minigrad.tensor import Tensor, constant


@autocast_op("adaptive_avg_pool2d")
def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over (Ho, Wo) bins of input (N, C, H, W) or (C, H, W); bin i of a dim of size
    n spans [floor(i n / out), ceil((i + 1) n / out)), as in PyTorch. output_size is an
    int or a pair, None keeping that dim's size. Computed as P_h @ x @ P_w^T with
    constant bin-averaging matrices, so it is differentiable to any order."""
    x, added_batch = batched(input, 2, "adaptive_avg_pool2d")
    sizes = _adaptive_sizes(output_size, x.shape[-2:], 2, "adaptive_avg_pool2d")
    rows = _bin_matrix(x, x.shape[-2], sizes[0])
    columns = _bin_matrix(x, x.shape[-1], sizes[1])
    return unbatched(rows @ x @ columns.T, added_batch)


@autocast_op("adaptive_avg_pool1d")
def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over L_out bins of input (N, C, L) or (C, L), binned as adaptive_avg_pool2d."""
    x, added_batch = batched(input, 1, "adaptive_avg_pool1d")
    (size,) = _adaptive_sizes(output_size, x.shape[-1:], 1, "adaptive_avg_pool1d")
    return unbatched(x @ _bin_matrix(x, x.shape[-1], size).T, added_batch)


def _adaptive_sizes(output_size, input_sizes, dims: int, op: str) -> tuple[int, ...]:
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != dims:
            raise ValueError(f"{op}: output_size must be an int or a tuple of {dims}, got "
                             f"{output_size!r}")
        output_size = tuple(n if o is None else o for o, n in zip(output_size, input_sizes))
    return size_tuple(output_size, dims, "output_size", op, 1)


def _bin_matrix(x: Tensor, size: int, out: int) -> Tensor:
    """P (out, size): P[i, k] = 1 / (bin i's length) for k in bin i, else 0."""
    xp = x.xp
    index = xp.arange(out)
    start = (index * size) // out
    end = -((-(index + 1) * size) // out)  # ceil((i + 1) size / out)
    position = xp.arange(size)
    inside = (position >= start[:, None]) & (position < end[:, None])
    return constant((inside / (end - start)[:, None]).astype(x.array.dtype))
