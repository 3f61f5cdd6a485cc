"""Convolutions with PyTorch's signatures: conv1d and conv2d (stride, padding as ints or
"same"/"valid", dilation, groups, bias), checked here and run by ops/convolution.py's
Convolution. A 1-D convolution runs as a 2-D one over rows of height 1.
"""
from __future__ import annotations

from minigrad.amp.cast_policy import autocast_op
from minigrad.kernels.windows import Window2d
from minigrad.nn.functional.window_args import batched, describe, size_tuple, unbatched
from minigrad.ops.convolution import Convolution
from minigrad.tensor import Tensor


@autocast_op("conv2d")
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
           stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation, as in PyTorch) of input (N, C, H, W) or
    (C, H, W) with weight (O, C / groups, kh, kw), plus bias (O,):

        out[n, o, y, x] = bias[o] + sum_{c, i, j} weight[o, c, i, j]
                                    * xpad[n, c, y * sh + i * dh, x * sw + j * dw]

    over the C / groups channels of o's group. stride, padding and dilation are ints or
    pairs; padding may be "valid" (none) or "same" (output as large as the input, stride
    1 only; the odd pixel of an even total goes after, as in PyTorch). Output size per
    dim: (size + 2 * padding - dilation * (k - 1) - 1) // stride + 1."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@autocast_op("conv1d")
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
           stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
    """1-D convolution of input (N, C, L) or (C, L) with weight (O, C / groups, k), plus
    bias (O,); the arguments as in conv2d, one size each."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def _convolution(input: Tensor, weight: Tensor, bias, stride, padding, dilation,  # noqa: A002
                 groups: int, dims: int, op: str) -> Tensor:
    stride = size_tuple(stride, dims, "stride", op, 1)
    dilation = size_tuple(dilation, dims, "dilation", op, 1)
    x, added_batch = batched(input, dims, op)
    _check_weight(x, weight, bias, groups, dims, op)
    kernel = tuple(weight.shape[2:])
    pads = conv_padding(padding, kernel, stride, dilation, op, RuntimeError)
    _check_kernel_fits(x, kernel, dilation, pads, op)
    if dims == 1:  # one row of height 1
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        kernel, stride, dilation, pads = (1,) + kernel, (1,) + stride, (1,) + dilation, \
            ((0, 0),) + pads
    inputs = (x, weight) if bias is None else (x, weight, bias)
    out = Convolution.apply(*inputs, window=Window2d(kernel, stride, dilation, pads), groups=groups)
    if dims == 1:
        out = out.squeeze(2)
    return unbatched(out, added_batch)


def conv_padding(padding, kernel: tuple, stride: tuple, dilation: tuple, op: str,
                 error: type[Exception]) -> tuple[tuple[int, int], ...]:
    """(before, after) per spatial dim, from an int, a tuple, "valid" or "same"."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * len(kernel)
        if padding != "same":
            raise error(f"{op}: invalid padding string {padding!r}, expected 'valid', "
                        "'same', an int or a tuple of ints")
        if any(s != 1 for s in stride):
            raise error(f"{op}: padding='same' is not supported for strided convolutions "
                        f"(stride={stride})")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((total // 2, total - total // 2) for total in totals)
    return tuple((p, p) for p in size_tuple(padding, len(kernel), "padding", op, 0))


def _check_weight(x: Tensor, weight: Tensor, bias, groups: int, dims: int, op: str) -> None:
    if not isinstance(weight, Tensor) or weight.ndim != dims + 2:
        shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise RuntimeError(f"{op}: expected a {dims + 2}-D weight (out_channels, "
                           f"in_channels / groups, *kernel_size), got {shape}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise RuntimeError(f"{op}: groups must be a positive int, got {groups!r}")
    out_channels, group_channels = weight.shape[:2]
    if out_channels % groups:
        raise RuntimeError(f"{op}: groups={groups} must divide the weight's {out_channels} "
                           f"output channels (weight of shape {tuple(weight.shape)})")
    if x.shape[1] != group_channels * groups:
        raise RuntimeError(
            f"{op}: given groups={groups} and weight of shape {tuple(weight.shape)}, expected "
            f"input of shape {tuple(x.shape)} to have {group_channels * groups} channels, "
            f"but got {x.shape[1]} channels")
    if bias is not None and (not isinstance(bias, Tensor) or tuple(bias.shape)
                             != (out_channels,)):
        shape = tuple(bias.shape) if isinstance(bias, Tensor) else type(bias).__name__
        raise RuntimeError(f"{op}: expected a bias of shape ({out_channels},) for weight of "
                           f"shape {tuple(weight.shape)}, got {shape}")
    operands = [x, weight] + ([] if bias is None else [bias])
    if len({t.dtype for t in operands}) > 1 or len({str(t.device) for t in operands}) > 1:
        raise RuntimeError(f"{op}: input, weight and bias must have one dtype and device, "
                           f"got {', '.join(describe(t) for t in operands)}")


def _check_kernel_fits(x: Tensor, kernel: tuple, dilation: tuple, pads: tuple,
                       op: str) -> None:
    padded = tuple(n + before + after for n, (before, after) in zip(x.shape[2:], pads))
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(p < e for p, e in zip(padded, extent)):
        raise RuntimeError(
            f"{op}: the padded input's spatial size {padded} (input of shape "
            f"{tuple(x.shape)}, padding {pads}) is smaller than the kernel's extent {extent} "
            f"(kernel_size {kernel}, dilation {dilation}): the kernel can't be larger than "
            "the padded input")
