"""Summing and copying gradients on their arrays when no graph is being recorded.

The engine sums the gradients sent to a node, and copies a gradient that must not become
a leaf's .grad as it is. Written as tensor ops (`total + grad`, `grad.clone()`), each is a
full op: operands checked, a node made when recording. That is needed only under
create_graph=True, when the gradient's own graph is recorded; otherwise these functions
do the same arithmetic on the arrays directly. This is the one shortcut the eager engine
takes (benchmarks/README_overhead.md says what it saves): the result is the same tensor
either way.
"""
from __future__ import annotations

from minigrad.autograd.grad_mode import MODES
from minigrad.tensor_base import TensorBase


def sum_gradients(total: TensorBase, grad: TensorBase) -> TensorBase:
    """total + grad (an op when the gradient's graph is recorded)."""
    if MODES.grad_enabled:
        return total + grad
    return total._wrap(total.xp.asarray(total.array + grad.array))  # 0-d stays an array


def copy_gradient(grad: TensorBase) -> TensorBase:
    """A row-major copy of grad (an op when the gradient's graph is recorded)."""
    if MODES.grad_enabled:
        return grad.clone()
    return grad._wrap(grad.xp.array(grad.array, copy=True, order="C"))
