"""SavedTensor: an array a backward rule needs, kept from forward to backward.

An op's forward works on arrays and calls `save_for_backward(*arrays)`; backward reads them
back as tensors (`self.saved`), so that a backward rule is tensor code and can itself be
differentiated. What a saved array turns back into depends on where it came from:

- an input of the op: that input tensor itself, so a second derivative flows into the
  input's own graph (for a leaf, into its .grad);
- the op's output: a tensor around the output array whose grad_fn is the node itself
  (under create_graph), sharing the output's version counter. The node keeps the array,
  not the output tensor, which would hold the node in turn;
- anything else forward computed: a constant tensor.

Inputs and the output can be changed in place after forward (`x.add_(1)`); each in-place
op adds 1 to the tensor's version counter. A saved input or output remembers the version
it had when saved, and unpacking it at another version raises, as PyTorch does, instead
of differentiating with the new values.
"""
from __future__ import annotations

from minigrad.autograd.grad_mode import MODES
from minigrad.tensor_base import TensorBase


class SavedTensor:
    """One saved array; `unpack(node)` gives it back as a tensor (see the module doc)."""

    __slots__ = ("tensor", "array", "version", "saved_version", "role", "make_tensor")

    def __init__(self, array, inputs: tuple, output: TensorBase):
        self.tensor = None  # the input tensor, when the array is an input's
        self.array = array  # the array, otherwise
        self.version = None  # the version counter to check, for an input or the output
        for index, t in enumerate(inputs):
            # forward saw only arrays: the one an input holds is recognised by identity
            if t.array is array:
                self.tensor, self.array = t, None
                self.version, self.role = t._version, index  # input `index`
                break
        else:
            self.make_tensor = output._wrap  # Tensor's constructor for op outputs
            if array is output.array:
                self.version, self.role = output._version, "output"
            else:
                self.role = "computed in forward"
        if self.version is not None:
            self.saved_version = self.version[0]

    def unpack(self, node) -> TensorBase:
        """The saved array as a tensor (`node` is the node that saved it)."""
        if self.version is not None and self.version[0] != self.saved_version:
            raise _modified_error(node, self)
        if self.tensor is not None:
            return self.tensor
        if self.role == "output":
            grad_fn = node if MODES.grad_enabled else None
            return self.make_tensor(self.array, grad_fn, self.version)
        return self.make_tensor(self.array)


def _modified_error(node, saved: SavedTensor) -> RuntimeError:
    array = saved.tensor.array if saved.tensor is not None else saved.array
    return RuntimeError(
        f"{node.name}: its {_described(saved.role)} (shape {tuple(array.shape)}, {array.dtype}), "
        f"needed for gradient computation, was modified by an in-place operation: it is "
        f"at version {saved.version[0]}, expected version {saved.saved_version}. Make the "
        "in-place change after backward(), or use an out-of-place op."
    )


def _described(role) -> str:
    return f"input {role}" if isinstance(role, int) else role
