"""What the backward engine does to a gradient on its way into `.grad`, seen through the
public API: it takes the dtype of the tensor it belongs to, it is stored as a plain
writable array even when a rule sent a broadcast view, and a gradient kept by
retain_grad() shares no memory with the gradient the engine passes on.
"""
from __future__ import annotations

import numpy as np

import minigrad as mg


class DoubleGradient(mg.autograd.Function):
    """out = 2 x, whose backward (as a user might write it) returns a float64 gradient
    whatever the input's dtype."""

    def forward(self, x):
        return x * 2

    def backward(self, grad):
        return grad.to(mg.float64) * 2


def test_a_float64_gradient_reaches_a_float32_leaf_as_float32():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    DoubleGradient.apply(x).backward(mg.tensor([0.5, 1.0, 1.5]))
    assert x.grad.dtype is mg.float32
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])


def test_a_broadcast_gradient_is_stored_as_a_writable_contiguous_grad():
    """sum's backward sends a read-only broadcast view of one element (here the product's
    gradient, 3); .grad must be an array of its own, which an optimizer updates in place."""
    x = mg.zeros(2, 3, requires_grad=True)
    (x.sum() * 3.0).backward()
    assert x.grad.is_contiguous()
    x.grad.add_(1.0)
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 4.0))


def test_a_retained_gradient_shares_no_memory_with_the_leafs():
    """h's gradient flows on to x unchanged (h = x + 0): x.grad may take that memory, so
    h.grad must be a copy."""
    x = mg.ones(3, requires_grad=True)
    h = x + 0.0
    h.retain_grad()
    (h * 3.0).sum().backward()
    x.grad.add_(1.0)
    np.testing.assert_array_equal(h.grad.numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])
