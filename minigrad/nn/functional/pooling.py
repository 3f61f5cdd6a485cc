"""Pooling with PyTorch's signatures and semantics: max_pool2d and avg_pool2d (kernel,
stride defaulting to the kernel, padding, ceil_mode; dilation and return_indices for max,
count_include_pad and divisor_override for avg), and their 1-D forms over rows of
height 1 (adaptive pooling is in adaptive_pooling.py). The arguments are checked and
turned into a window here; ops/pooling.py's Functions pool.
"""
from __future__ import annotations

from minigrad.backend import array_module
from minigrad.kernels.windows import Window2d
from minigrad.nn.functional.window_args import batched, size_tuple, unbatched
from minigrad.ops.pooling import AvgPool2D, MaxPool2DWithIndices, winning_taps
from minigrad.tensor import Tensor, constant


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over each kh x kw window of input (N, C, H, W) or (C, H, W). stride defaults to
    kernel_size; padding (at most half the kernel) reads -inf; ceil_mode rounds the
    output size up (a window may hang over the end, but must start inside the input or
    the left padding). With return_indices, also the int64 position of each max in its
    (H, W) plane (flattened), as in PyTorch."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, 2, "max_pool2d")


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """max_pool2d's 1-D form, over input (N, C, L) or (C, L)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, 1, "max_pool1d")


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over each kh x kw window of input (N, C, H, W) or (C, H, W). stride defaults
    to kernel_size; padding (at most half the kernel) reads 0. The divisor of a window is
    its size clipped to the padded input (count_include_pad=True) or the number of input
    elements it covers (False); divisor_override replaces both."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2, "avg_pool2d")


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """avg_pool2d's 1-D form, over input (N, C, L) or (C, L)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     None, 1, "avg_pool1d")


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode,  # noqa: A002
              return_indices, dims: int, op: str):
    x, added_batch = batched(input, dims, op)
    window = _pool_window(x, kernel_size, stride, padding, dilation, ceil_mode, dims, op)
    if dims == 1:
        x = x.unsqueeze(2)
    pooled = MaxPool2DWithIndices.apply(x, window=window)
    results = [pooled]
    if return_indices:
        winner = winning_taps(x.array, pooled.array, window)
        results.append(constant(_flat_indices(winner, window, x.shape[-2:])))
    results = [unbatched(r.squeeze(2) if dims == 1 else r, added_batch) for r in results]
    return tuple(results) if return_indices else results[0]


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,  # noqa: A002
              divisor_override, dims: int, op: str) -> Tensor:
    x, added_batch = batched(input, dims, op)
    window = _pool_window(x, kernel_size, stride, padding, 1, ceil_mode, dims, op)
    if divisor_override is not None and divisor_override == 0:
        raise ValueError(f"{op}: divisor_override must be non-zero")
    if dims == 1:
        x = x.unsqueeze(2)
    divisor = _divisor(x, window, count_include_pad, divisor_override)
    out = AvgPool2D.apply(x, window=window, divisor=divisor)
    return unbatched(out.squeeze(2) if dims == 1 else out, added_batch)


def _pool_window(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
                 dims: int, op: str) -> Window2d:
    """The window of a pooling op over x (N, C, *spatial), with the extra after-padding
    that ceil_mode's last window needs; 1-D gets a leading kernel row of height 1."""
    kernel = size_tuple(kernel_size, dims, "kernel_size", op, 1)
    no_stride = stride is None or (isinstance(stride, (tuple, list)) and not stride)
    stride = kernel if no_stride else size_tuple(stride, dims, "stride", op, 1)
    pads = size_tuple(padding, dims, "padding", op, 0)
    dilation = size_tuple(dilation, dims, "dilation", op, 1)
    if any(p > k // 2 for p, k in zip(pads, kernel)):
        raise RuntimeError(f"{op}: padding should be at most half of kernel_size, got "
                           f"padding={pads} and kernel_size={kernel}")
    sizes = x.shape[2:]
    outputs = tuple(_pooled_size(*args, ceil_mode) for args in
                    zip(sizes, kernel, stride, pads, dilation))
    if min(outputs) < 1:
        raise RuntimeError(f"{op}: input of shape {tuple(x.shape)} gives an output of "
                           f"spatial size {outputs}, which is too small (kernel_size={kernel}, "
                           f"stride={stride}, padding={pads}, dilation={dilation})")
    # ceil_mode: pad the end far enough for the last window to fit
    after = tuple(max(p, (o - 1) * s + d * (k - 1) + 1 - n - p)
                  for n, k, s, p, d, o in zip(sizes, kernel, stride, pads, dilation, outputs))
    padding_pairs = tuple(zip(pads, after))
    if dims == 1:
        return Window2d((1,) + kernel, (1,) + stride, (1,) + dilation,
                        ((0, 0),) + padding_pairs)
    return Window2d(kernel, stride, dilation, padding_pairs)


def _pooled_size(size: int, kernel: int, stride: int, pad: int, dilation: int,
                 ceil_mode: bool) -> int:
    """PyTorch's output size; with ceil_mode the last window must start inside the input
    or the left padding."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _divisor(x: Tensor, window: Window2d, count_include_pad: bool, divisor_override):
    """The divisor of every output position (Ho, Wo), as an array of x's dtype: per dim,
    a window counts the positions it covers inside the padded input (clipped before
    ceil_mode's overhang), or only inside the input; the 2-D divisor is their product."""
    xp = x.xp
    output_size = window.output_size(*x.shape[-2:])
    if divisor_override is not None:
        return xp.full(output_size, divisor_override, dtype=x.array.dtype)
    counts = []
    for dim, size in enumerate(x.shape[-2:]):
        pad_before = window.padding[dim][0]  # the user's (the end may add ceil's overhang)
        start = xp.arange(output_size[dim]) * window.stride[dim] - pad_before
        end = xp.minimum(start + window.kernel[dim], size + pad_before)
        if not count_include_pad:
            start, end = xp.maximum(start, 0), xp.minimum(end, size)
        counts.append(end - start)
    return (counts[0][:, None] * counts[1][None, :]).astype(x.array.dtype)


def _flat_indices(winner, window: Window2d, input_size):
    """Each winner's position in its input plane, flattened: row * W + column."""
    xp = array_module(winner)
    (_, kw), (sh, sw), (dh, dw) = window.kernel, window.stride, window.dilation
    (top, _), (left, _) = window.padding
    out_h, out_w = winner.shape[-2:]
    rows = xp.arange(out_h).reshape(-1, 1) * sh + (winner // kw) * dh - top
    columns = xp.arange(out_w) * sw + (winner % kw) * dw - left
    return (rows * input_size[1] + columns).astype(xp.int64)
