"""Pooling modules with PyTorch's names and arguments: MaxPool1d/2d, AvgPool1d/2d and
AdaptiveAvgPool1d/2d (the functions are in minigrad/nn/functional/pooling.py and
adaptive_pooling.py)."""
from __future__ import annotations

from minigrad.nn.functional.adaptive_pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
from minigrad.nn.functional.pooling import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from minigrad.nn.modules.module import Module
from minigrad.tensor import Tensor


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over windows of (N, C, L) or (C, L) inputs (see F.max_pool1d)."""

    def forward(self, input: Tensor):  # noqa: A002
        return max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max over windows of (N, C, H, W) or (C, H, W) inputs (see F.max_pool2d)."""

    def forward(self, input: Tensor):  # noqa: A002
        return max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)


class _AvgPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mean over windows of (N, C, L) or (C, L) inputs (see F.avg_pool1d)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        # stored as 1-tuples, as PyTorch's AvgPool1d does
        super().__init__(_single(kernel_size), _single(stride if stride is not None
                                                       else kernel_size),
                         _single(padding), ceil_mode, count_include_pad)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Mean over windows of (N, C, H, W) or (C, H, W) inputs (see F.avg_pool2d)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, self.divisor_override)


def _single(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class AdaptiveAvgPool1d(Module):
    """Mean over output_size bins of (N, C, L) or (C, L) inputs (see
    F.adaptive_avg_pool1d)."""

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """Mean over output_size bins of (N, C, H, W) or (C, H, W) inputs (see
    F.adaptive_avg_pool2d); AdaptiveAvgPool2d(1) is global average pooling."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return adaptive_avg_pool2d(input, self.output_size)
