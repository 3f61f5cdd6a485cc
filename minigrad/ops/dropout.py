"""Dropout's Function: a multiply by a fixed boolean mask and a scale. PyTorch's CPU
dropout records exactly this, a multiply by the scaled mask (MulBackward0)."""
from __future__ import annotations

from minigrad.autograd.function import Function


class MaskedScale(Function):
    """out = x * mask * scale for a fixed boolean mask;  dx = g * mask * scale (the same op,
    so its gradient is itself). The mask is kept as booleans: one byte per element."""

    def forward(self, x, mask=None, scale=1.0):
        self.mask, self.scale = mask, scale
        out = x * mask  # the booleans are cast inside the multiply, no float mask is made
        out *= x.dtype.type(scale)
        return out

    def backward(self, grad):
        return MaskedScale.apply(grad, mask=self.mask, scale=self.scale)
