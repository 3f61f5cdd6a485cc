"""Function: the base of every differentiable op, and its node in the graph.

An op subclasses Function with `forward(self, *arrays, **params) -> array`, which works on
raw backend arrays (NumPy or CuPy, through `xp`), and `backward(self, grad)`, which is
written with tensor ops and returns one gradient per input (None where none flows).
`Op.apply(*tensors, **params)` runs forward and, when grad mode is on and an input requires
grad, makes the new instance the output's `grad_fn`: the node remembers its inputs, and
the engine (engine.py) later calls its backward.

Because backward rules are tensor code, running them with grad mode on
(`create_graph=True`) records a graph of the gradient itself: that is all it takes to get
second derivatives.
"""
from __future__ import annotations

import traceback
from typing import NamedTuple

import numpy as np

from minigrad import dtypes
from minigrad.autograd.grad_mode import MODES
from minigrad.tensor_base import TensorBase

# An _Edge and its release take about 0.45 us (a third of a small op's bookkeeping); an
# array smaller than a page is not worth that
EDGE_MIN_BYTES = 4096


class _Instruments:
    """The process-wide profiler that `mg.profiler` installs (None when not profiling);
    apply() hands every op to it."""

    def __init__(self):
        self.profiler = None


INSTRUMENTS = _Instruments()


class Function:
    """Base of every differentiable op; an instance is one node of the graph.

    Forward saves what backward needs with `save_for_backward(*arrays)`; backward reads
    them back as tensors through `self.saved`: an input's array comes back as that input
    tensor and the output's array as the output, so a backward rule that uses them stays
    connected to the graph for higher derivatives.

    Attributes set when the node joins a graph:
        inputs: the input tensors.
        needs_input_grad: per input, whether it requires grad.
    Once its backward has run (unless the graph is retained) a node drops all of these and
    everything its forward stored on it, so a loss kept after backward keeps no activations
    alive.
    """

    is_view = False  # True for ops whose output may share input 0's memory (and version)
    # what a node holds until forward saves arrays, a hook is registered or backward frees
    # it; as class attributes, no op writes them
    _saved = ()
    _out_data = None
    _hooks = None
    _retained = None
    _freed = False

    inputs: tuple
    needs_input_grad: tuple

    def forward(self, *arrays, **params):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError

    def save_for_backward(self, *arrays) -> None:
        self._saved = arrays

    @classmethod
    def apply(cls, *inputs: TensorBase, **params):
        """Run the op on the inputs' arrays; link the output into the graph if needed."""
        if INSTRUMENTS.profiler is not None:
            return INSTRUMENTS.profiler.timed_apply(cls, inputs, params)
        node = cls()
        try:
            if len(inputs) == 2 and not params:
                # the common case, a binary op: passing the two arrays directly skips
                # building an argument list (1.2k of the 14k instructions of `a * b`)
                out = node.forward(inputs[0].data, inputs[1].data)
            else:
                out = node.forward(*[t.data for t in inputs], **params)
        except Exception as exc:
            # NumPy and CuPy reject bad shapes, and each other's arrays, in many ways
            if isinstance(exc, (ValueError, TypeError, IndexError)) or _mixes_devices(inputs):
                raise _op_error(cls.__name__, inputs, exc) from exc
            raise
        if type(out) is not np.ndarray and isinstance(out, np.generic):
            out = node._array_from_scalar(out)
        first = inputs[0]
        if MODES.grad_enabled:
            for t in inputs:
                if t._requires_grad:
                    return node._link(inputs, out)
        return first._wrap(out, None, first._version if cls.is_view else None)

    def _array_from_scalar(self, scalar):
        """NumPy returns a scalar from 0-d arithmetic: the output becomes a 0-d array, and so
        does the scalar where forward saved it (backward must recognise its output)."""
        out = np.asarray(scalar)
        self._saved = tuple(out if array is scalar else array for array in self._saved)
        return out

    def _link(self, inputs: tuple, out):
        """Make this node the creator of `out`: remember the inputs and their versions.

        A node holds no array it did not save: an input whose array it does not need is
        kept as an _Edge (its creator, shape and dtype), and the output's array only if it
        was saved, so that every intermediate is freed as soon as nothing needs it. (Inputs
        under EDGE_MIN_BYTES stay whole: for those an edge costs more than it frees.)"""
        saved = self._saved
        kept, needs, versions = [], [], []
        for t in inputs:
            needs.append(t._requires_grad)
            versions.append(t._version[0])
            if (t.grad_fn is not None and t.data.nbytes >= EDGE_MIN_BYTES
                    and not (saved and _is_one_of(t.data, saved))):
                t = _Edge(t)
            kept.append(t)
        self.inputs = tuple(kept)
        self.needs_input_grad = tuple(needs)
        self._versions = versions
        if MODES.anomaly:
            self._trace = "".join(traceback.format_stack()[:-3])
        first = inputs[0]
        result = first._wrap(out, self, first._version if self.is_view else None)
        if saved and _is_one_of(out, saved):
            self._out_data = out
            self._out_version = result._version
            self._out_version_at_save = result._version[0]
        return result

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def saved(self) -> tuple:
        """The saved arrays as tensors (inputs and output keep their graph)."""
        if self._freed:
            raise RuntimeError(
                f"{self.name}: trying to backward through the graph a second time (or to "
                "read saved tensors after they were freed). Saved arrays are freed after "
                "backward; pass retain_graph=True to the first backward() to keep them."
            )
        return tuple(map(self._as_tensor, self._saved))

    def _as_tensor(self, array):
        for index, t in enumerate(self.inputs):
            if t.data is array:
                if t._version[0] != self._versions[index]:
                    raise _modified_error(self.name, index, self._versions[index], t)
                return t
        first = self.inputs[0]
        if array is self._out_data:
            if self._out_version[0] != self._out_version_at_save:
                raise RuntimeError(
                    f"{self.name}: its output, needed for gradient computation, was modified "
                    "by an in-place operation after it was computed"
                )
            return first._wrap(array, self if MODES.grad_enabled else None)
        return first._wrap(array, None)

    def _free(self) -> None:
        """Drop everything this node holds of the forward pass, saved arrays, inputs and
        whatever else its forward stored on it (after its backward has run)."""
        self.__dict__.clear()
        self._freed = True


class _Edge:
    """What a node keeps of an input whose array it did not save: the node that made the
    input (for the backward walk), its shape and dtype (to fit a gradient to it) and a way
    to make tensors; not the array itself."""

    __slots__ = ("grad_fn", "_requires_grad", "data", "_version", "_wrap")

    def __init__(self, tensor: TensorBase):
        self.grad_fn = tensor.grad_fn
        self._requires_grad = tensor._requires_grad
        self.data = _ArrayInfo(tensor.data.shape, tensor.data.dtype)
        self._version = tensor._version
        self._wrap = tensor._wrap

    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def dtype(self):
        return dtypes.from_numpy(self.data.dtype)


class _ArrayInfo(NamedTuple):
    """The shape and dtype of an array that is no longer held."""

    shape: tuple
    dtype: np.dtype


def _is_one_of(array, arrays: tuple) -> bool:
    """`array` is one of `arrays` (by identity: arrays compare elementwise)."""
    for other in arrays:
        if other is array:
            return True
    return False


def _modified_error(op: str, index: int, expected: int, t: TensorBase) -> RuntimeError:
    return RuntimeError(
        f"{op}: input {index} (shape {tuple(t.shape)}, {t.dtype}), needed for gradient "
        f"computation, was modified by an in-place operation: it is at version "
        f"{t._version[0]}, expected version {expected}. Make the in-place change after "
        "backward(), or use an out-of-place op."
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
