"""Changing dtype or device, differentiably (the gradient goes back the other way)."""
from __future__ import annotations

from minigrad import dtypes
from minigrad.autograd.function import Function
from minigrad.backend import Device, device_of
from minigrad.backend import to_device as _move
from minigrad.tensor_base import TensorBase


class ToDtype(Function):
    """out = x as another dtype;  dx = g as x's dtype"""

    def forward(self, x, dtype):
        self.input_dtype = dtypes.from_numpy(x.dtype)
        return x.astype(dtype.np)

    def backward(self, grad):
        return grad.to(self.input_dtype) if self.input_dtype.is_floating_point else None


class ToDevice(Function):
    """out = x copied to another device;  dx = g copied back"""

    def forward(self, x, device):
        self.input_device = device_of(x)
        return _move(x, device)

    def backward(self, grad):
        return grad.to(self.input_device)


def to_dtype(x: TensorBase, dtype: dtypes.dtype) -> TensorBase:
    if x.array.dtype == dtype.np:
        return x
    if x._requires_grad and not dtype.is_floating_point:
        return x._wrap(x.array.astype(dtype.np))  # an integer result has no grad
    return ToDtype.apply(x, dtype=dtype)


def to_device(x: TensorBase, device: Device) -> TensorBase:
    if x.device == device:
        return x
    return ToDevice.apply(x, device=device)
