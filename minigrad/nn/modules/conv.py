"""Conv1d and Conv2d: PyTorch's modules, arguments, parameter names and initialisation."""
from __future__ import annotations

from minigrad import creation
from minigrad.nn import init
from minigrad.nn.functional.conv import conv1d, conv2d, conv_padding
from minigrad.nn.functional.padding import pad
from minigrad.nn.functional.window_args import size_tuple
from minigrad.nn.modules.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """The shared body of Conv1d and Conv2d: weight (out_channels, in_channels / groups,
    *kernel_size) and bias (out_channels,), both drawn as PyTorch does: kaiming_uniform_
    with a = sqrt(5) for the weight (U(-b, b), b = 1 / sqrt(fan_in)) and U(-b, b) for the
    bias, fan_in = in_channels / groups * prod(kernel_size). padding_mode "zeros" pads
    inside the convolution; "reflect", "replicate" and "circular" pad the input first
    (F.pad)."""

    _dims: int

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1,
                 padding=0, dilation=1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__()
        name = type(self).__name__
        in_channels = creation.as_size(in_channels, name, "in_channels")
        out_channels = creation.as_size(out_channels, name, "out_channels")
        groups = creation.as_size(groups, name, "groups")
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups={groups} must be positive and divide "
                             f"in_channels={in_channels} and out_channels={out_channels}")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {PADDING_MODES}, got "
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = size_tuple(kernel_size, self._dims, "kernel_size", name, 1)
        self.stride = size_tuple(stride, self._dims, "stride", name, 1)
        self.dilation = size_tuple(dilation, self._dims, "dilation", name, 1)
        # (before, after) per dim; checks the padding string, as PyTorch does at construction
        self._padding_pairs = conv_padding(padding, self.kernel_size, self.stride,
                                           self.dilation, name, ValueError)
        self.padding = padding if isinstance(padding, str) else tuple(
            before for before, _ in self._padding_pairs)
        self.padding_mode = padding_mode
        self.weight = Parameter(creation.zeros(
            (out_channels, in_channels // groups) + self.kernel_size, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(creation.zeros(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.layer_defaults_(self.weight, self.bias)

    def _convolve(self, input: Tensor, padding) -> Tensor:  # noqa: A002
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if self.padding_mode == "zeros":
            return self._convolve(input, self.padding)
        # F.pad takes the last dim's (left, right) first
        widths = tuple(w for pair in reversed(self._padding_pairs) for w in pair)
        return self._convolve(pad(input, widths, mode=self.padding_mode), 0)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * self._dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) or (C, L) inputs (see F.conv1d)."""

    _dims = 1

    def _convolve(self, input: Tensor, padding) -> Tensor:  # noqa: A002
        return conv1d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                      self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) or (C, H, W) inputs (see F.conv2d)."""

    _dims = 2

    def _convolve(self, input: Tensor, padding) -> Tensor:  # noqa: A002
        return conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                      self.groups)
