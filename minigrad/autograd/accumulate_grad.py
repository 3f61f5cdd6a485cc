"""AccumulateGrad: the node at a leaf, where a gradient ends its walk and adds into .grad.

Every leaf tensor that requires grad (a parameter, an input made with requires_grad=True)
gets one such node the first time an op uses it; the op's `next_functions` point to it,
so the engine reaches it like any other node and runs it when every path into the leaf
has delivered its gradient. The node holds the leaf as `.variable`, as in PyTorch; the
leaf holds the node only weakly (it lives as long as some graph uses it).

What running it does, in order:
1. the leaf's hooks (Tensor.register_hook) run first, and may replace the gradient (the
   engine runs them, as for any node's tensor);
2. the gradient is accumulated into `.grad`: stored as it is when `.grad` is None (if it
   is laid out as a plain row-major array; a broadcast or transposed view is copied),
   added in place otherwise, or added out of place when the gradient's own graph is being
   recorded (create_graph=True), so that `.grad` keeps that graph;
3. the leaf's post-accumulate hooks run (DistributedDataParallel starts sending a bucket of
   gradients from these, while the rest of backward goes on).
"""
from __future__ import annotations

import weakref

from minigrad.autograd.grad_mode import MODES
from minigrad.autograd.node import Node
from minigrad.autograd.unrecorded import copy_gradient, sum_gradients
from minigrad.tensor_base import TensorBase


class AccumulateGrad(Node):
    """The node of a leaf that requires grad; see the module docstring."""

    def __init__(self, variable: TensorBase):
        self.variable = variable
        self.grad_shape = variable.array.shape
        self.grad_dtype = variable.array.dtype

    @property
    def name(self) -> str:
        return "AccumulateGrad"

    @property
    def _hooks(self) -> list | None:
        """A leaf's hooks stay on the leaf (this node lives only as long as a graph)."""
        return self.variable._hooks

    def backward(self, grad) -> tuple:
        leaf = self.variable
        if leaf.grad is None:
            leaf.grad = grad if _is_plain_array(grad.array) else copy_gradient(grad)
        elif MODES.grad_enabled or not _adds_in_place(leaf.grad, grad):
            leaf.grad = sum_gradients(leaf.grad, grad)
        else:
            leaf.grad.array += grad.array
            leaf.grad._version[0] += 1
        for hook in leaf._post_accumulate_hooks or ():
            hook(leaf)
        return ()


def accumulator_of(leaf: TensorBase) -> AccumulateGrad:
    """The leaf's AccumulateGrad node: the one a live graph already uses, or a new one."""
    node = leaf._accumulator() if leaf._accumulator is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._accumulator = weakref.ref(node)
    return node


def _is_plain_array(array) -> bool:
    """Row-major, without gaps, and writable: what .grad may be without a copy (a read-only
    broadcast view repeats elements; a transposed one would make an optimizer walk the
    gradient and the parameter in different orders)."""
    return array.flags.c_contiguous and getattr(array.flags, "writeable", True)


def _adds_in_place(total: TensorBase, grad: TensorBase) -> bool:
    """`total.array += grad.array` is safe: same shape and dtype, a plain array, no graph."""
    return (total.grad_fn is None and not total.requires_grad
            and _is_plain_array(total.array)
            and total.array.shape == grad.array.shape and total.array.dtype == grad.array.dtype)
