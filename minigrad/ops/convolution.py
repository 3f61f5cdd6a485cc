"""Convolution as three Functions, closed under differentiation: the forward and its two
gradients, each computed by minigrad/kernels/conv.py (im2col and one matmul per group, on
2-D windows; a 1-D convolution runs over rows of height 1), each one's gradients written
with the three. Named as PyTorch's nodes: a convolution records ConvolutionBackward0, and
the node of its input gradient prints as PyTorch's second-order one,
ConvolutionBackwardBackward0. Every gradient is bilinear, so for an upstream h:
    Convolution(x, w):            dx = ConvolutionBackward(g, w),  dw = ConvolutionWeightGrad(x, g)
    ConvolutionBackward(g, w):    dg = Convolution(h, w),          dw = ConvolutionWeightGrad(h, g)
    ConvolutionWeightGrad(x, g):  dx = ConvolutionBackward(g, h),  dg = Convolution(x, h)
"""
from __future__ import annotations

from minigrad.autograd.function import Function
from minigrad.kernels import conv as kernels


class Convolution(Function):
    """out = conv2d(x, w) + b;  dx, dw as in the module docstring,  db = sum of g over
    (N, Ho, Wo)."""

    def forward(self, x, weight, bias=None, window=None, groups=1):
        self.window, self.groups = window, groups
        self.save_for_backward(x, weight)
        return kernels.conv2d(x, weight, bias, window, groups)

    def backward(self, grad):
        x, weight = self.saved
        needs = self.needs_input_grad
        geometry = {"window": self.window, "groups": self.groups}
        grad_x = ConvolutionBackward.apply(grad, weight, input_size=x.shape[-2:], **geometry) \
            if needs[0] else None
        grad_weight = ConvolutionWeightGrad.apply(x, grad, **geometry) if needs[1] else None
        if len(needs) == 2:
            return grad_x, grad_weight
        return grad_x, grad_weight, grad.sum((0, 2, 3)) if needs[2] else None


class ConvolutionBackward(Function):
    """dx = the adjoint of conv2d in x, applied to g (a transposed convolution);
    dg = Convolution(h, w),  dw = ConvolutionWeightGrad(h, g)."""

    def forward(self, grad, weight, input_size=None, window=None, groups=1):
        self.window, self.groups = window, groups
        self.save_for_backward(grad, weight)
        return kernels.conv2d_input_grad(grad, weight, tuple(input_size), window, groups)

    def backward(self, h):
        grad, weight = self.saved
        needs = self.needs_input_grad
        geometry = {"window": self.window, "groups": self.groups}
        grad_grad = Convolution.apply(h, weight, **geometry) if needs[0] else None
        grad_weight = ConvolutionWeightGrad.apply(h, grad, **geometry) if needs[1] else None
        return grad_grad, grad_weight


class ConvolutionWeightGrad(Function):
    """dw[o, c, i, j] = sum_{n, y, x} g[n, o, y, x] xpad[n, c, y sh + i dh, x sw + j dw];
    dx = ConvolutionBackward(g, h),  dg = Convolution(x, h)."""

    def forward(self, x, grad, window=None, groups=1):
        self.window, self.groups = window, groups
        self.save_for_backward(x, grad)
        return kernels.conv2d_weight_grad(x, grad, window, groups)

    def backward(self, h):
        x, grad = self.saved
        needs = self.needs_input_grad
        geometry = {"window": self.window, "groups": self.groups}
        grad_x = ConvolutionBackward.apply(grad, h, input_size=x.shape[-2:], **geometry) \
            if needs[0] else None
        grad_grad = Convolution.apply(x, h, **geometry) if needs[1] else None
        return grad_x, grad_grad
