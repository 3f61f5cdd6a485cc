"""Function: the base of every differentiable op, and its node in the graph.

An op subclasses Function with `forward(self, *arrays, **params) -> array`, which works on
raw backend arrays (NumPy or CuPy, through `xp`), and `backward(self, grad)`, which is
written with tensor ops and returns one gradient per input (None where none flows).
`Op.apply(*tensors, **params)` runs forward and, when grad mode is on and an input requires
grad, makes the new instance the output's `grad_fn`: a node (node.py) whose
`next_functions` lead to the nodes of the inputs, and which keeps what forward saved.

Because backward rules are tensor code, running them with grad mode on
(`create_graph=True`) records a graph of the gradient itself: that is all it takes to get
second derivatives.
"""
from __future__ import annotations

import traceback

import numpy as np

from minigrad.autograd.accumulate_grad import accumulator_of
from minigrad.autograd.grad_mode import MODES
from minigrad.autograd.node import Node
from minigrad.autograd.saved_tensor import SavedTensor
from minigrad.tensor_base import TensorBase


class Function(Node):
    """Base of every differentiable op; an instance is one node of the graph.

    Forward saves what backward needs with `save_for_backward(*arrays)`; backward reads
    them back as tensors through `self.saved` (saved_tensor.py says what each becomes).
    `self.needs_input_grad[i]` tells backward whether input i wants a gradient at all.

    Once its backward has run (unless the graph is retained) a node releases what it
    saved and everything else its forward stored on it, so a loss kept after backward
    keeps no activations alive; its next_functions stay, as in PyTorch.
    """

    # the graph's own attributes; anything else forward stores on a node goes to its
    # __dict__, which release() clears
    __slots__ = ("next_functions", "needs_input_grad", "grad_shape", "grad_dtype", "_saved")

    is_view = False  # True for ops whose output may share input 0's memory (and version)
    _to_save = ()  # what forward passed to save_for_backward, until the node is attached

    @property
    def name(self) -> str:
        """PyTorch's name for the node: the op's name and "Backward0" ("MulBackward0").
        An op whose name is a Module's is called XFunction (PyTorch's own convention for
        Functions, as in LinearFunction), so that the two classes are never confused;
        its node is still printed as PyTorch prints it ("TanhBackward0")."""
        return type(self).__name__.removesuffix("Function") + "Backward0"

    def forward(self, *arrays, **params):
        raise NotImplementedError

    def save_for_backward(self, *arrays) -> None:
        self._to_save = arrays

    @classmethod
    def apply(cls, *inputs: TensorBase, **params):
        """Run the op on the inputs' arrays; link the output into the graph if needed."""
        node = cls()
        try:
            out = node.forward(*[t.array for t in inputs], **params)
        except Exception as exc:
            # NumPy and CuPy reject bad shapes, and each other's arrays, in many ways
            if isinstance(exc, (ValueError, TypeError, IndexError)) or _mixes_devices(inputs):
                raise _op_error(cls.__name__, inputs, exc) from exc
            raise
        if isinstance(out, np.generic):
            out = node._array_from_scalar(out)
        if MODES.grad_enabled:
            for t in inputs:
                if t._requires_grad:
                    return node._attach(inputs, out)
        first = inputs[0]
        return first._wrap(out, None, first._version if cls.is_view else None)

    def _attach(self, inputs: tuple, out) -> TensorBase:
        """Make this node the grad_fn of a new tensor around `out`: record where each
        input's gradient goes, the output's shape and dtype, and what forward saved."""
        edges, needs = [], []
        for t in inputs:
            edges.append(gradient_edge(t))
            needs.append(t._requires_grad)
        self.next_functions, self.needs_input_grad = tuple(edges), tuple(needs)
        self.grad_shape, self.grad_dtype = out.shape, out.dtype
        first = inputs[0]
        output = first._wrap(out, self, first._version if self.is_view else None)
        self._saved = tuple(SavedTensor(array, inputs, output)
                            for array in self.__dict__.pop("_to_save", ()))
        if MODES.anomaly:  # detect_anomaly names the forward call of a failing backward
            self._trace = "".join(traceback.format_stack()[:-3])
        return output

    def _array_from_scalar(self, scalar):
        """NumPy returns a scalar from 0-d arithmetic: the output becomes a 0-d array, and
        so does the scalar where forward saved it (it must be recognised as the output)."""
        out = np.asarray(scalar)
        self._to_save = tuple(out if array is scalar else array for array in self._to_save)
        return out

    @property
    def saved(self) -> tuple:
        """The saved arrays as tensors (inputs and output keep their graph)."""
        if self._released:
            raise freed_graph_error(self)
        return tuple(saved.unpack(self) for saved in self._saved)

    def release(self) -> None:
        """Drop what forward left for backward that holds memory: the saved tensors and
        every array forward stored on the node. Small values (dims, shapes, flags) and the
        edges stay, as in PyTorch, so a node that saved nothing can run again; one that
        dropped something may not (`_released`: the engine then refuses to walk it)."""
        if not self._saved and not self.__dict__:
            return  # forward kept nothing: the node can run again
        held = [name for name, value in vars(self).items() if _holds_array(value)]
        if self._saved or held:
            self._released = True
        self._saved = ()
        for name in held:
            delattr(self, name)


def _holds_array(value) -> bool:
    """An array or tensor, or a tuple, list or dict with one in it."""
    if isinstance(value, (tuple, list)):
        return any(map(_holds_array, value))
    if isinstance(value, dict):
        return any(map(_holds_array, value.values()))
    return hasattr(value, "shape")


def gradient_edge(t: TensorBase) -> tuple:
    """Where the gradient of `t` goes: (its grad_fn, 0); (its AccumulateGrad node, 0) for
    a leaf that requires grad; (None, 0) for a tensor that needs no gradient."""
    if t.grad_fn is not None:
        return (t.grad_fn, 0)
    if t._requires_grad:
        return (accumulator_of(t), 0)
    return (None, 0)


def freed_graph_error(node: Node) -> RuntimeError:
    return RuntimeError(
        f"{node.name}: trying to backward through the graph a second time (or to read "
        "saved tensors after they were freed). Saved arrays are freed after backward; pass "
        "retain_graph=True to the first backward() to keep them."
    )


def _mixes_devices(inputs) -> bool:
    return len({t.device for t in inputs}) > 1


def _op_error(op: str, inputs, exc: Exception) -> RuntimeError:
    described = ", ".join(
        f"{tuple(t.shape)} {t.dtype.name} on {t.device}" for t in inputs
    )
    devices = {str(t.device) for t in inputs}
    if len(devices) > 1:
        hint = f"expected all tensors on the same device, got {' and '.join(sorted(devices))}"
    else:
        hint = str(exc)
    return RuntimeError(f"{op}: invalid inputs [{described}]: {hint}")
