"""Node: a vertex of the backward graph, as in PyTorch.

Every tensor made by an op that records a graph has a `grad_fn`: the node that will turn
the gradient of that tensor into gradients of the op's inputs. A node knows where those
go through `next_functions`, one entry per input:

    (node that receives that input's gradient, 0)   for an input that requires grad
    (None, 0)                                        for one that does not

The receiving node of a non-leaf input is the input's own `grad_fn`; that of a leaf that
requires grad is the leaf's AccumulateGrad node (accumulate_grad.py), which adds the
gradient into `.grad`. (The 0 is the index of the output of that node: every minigrad op
has one output.)

Two kinds of node exist: Function (function.py), the base of every op, and AccumulateGrad.
The engine (engine.py) only uses what is defined here: `backward`, `next_functions`, the
shape and dtype a node's incoming gradient must have, the hooks registered on the tensor
the node made, and `release`.
"""
from __future__ import annotations


class Node:
    """A vertex of the backward graph; see the module docstring.

    Attributes:
        next_functions: per input of the op, (node, 0) or (None, 0).
        grad_shape, grad_dtype: the shape and NumPy dtype of the tensor this node made,
            hence of the gradient it receives (the engine fits gradients to them).
    """

    __slots__ = ("__dict__", "__weakref__")

    next_functions: tuple = ()
    grad_shape: tuple
    grad_dtype: object
    # set on few nodes: the hooks of the tensor this node made (Tensor.register_hook) and
    # the tensor that asked for retain_grad() (a weak reference)
    _hooks: list | None = None
    _retained_by = None
    _released = False  # True once backward dropped something this node would need again

    @property
    def name(self) -> str:
        """The name PyTorch prints for this node, e.g. "MulBackward0"."""
        raise NotImplementedError

    def backward(self, grad) -> tuple:
        """The gradients of the inputs, one per entry of next_functions (None where none
        flows), given the gradient of the output."""
        raise NotImplementedError

    def release(self) -> None:
        """Drop what forward left for backward, once backward has run (nothing, unless the
        kind of node keeps something: see Function.release)."""

    def __repr__(self) -> str:
        return f"<{self.name} object at {id(self):#x}>"
