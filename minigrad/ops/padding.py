"""Constant padding as a Function, named as PyTorch's node (ConstantPadNdBackward0); the
other padding modes are index_select gathers (nn/functional/padding.py)."""
from __future__ import annotations

from minigrad.autograd.function import Function
from minigrad.backend import array_module


class ConstantPadNd(Function):
    """out = x surrounded by `value`, widths[d] = (before, after) >= 0 elements per dim;
    dx = g with the padding sliced off"""

    def forward(self, x, widths, value):
        self.inside = tuple(slice(before, before + n) for (before, _), n in zip(widths, x.shape))
        return array_module(x).pad(x, widths, mode="constant", constant_values=value)

    def backward(self, grad):
        return grad[self.inside]
