"""Reverse-mode autograd: the Function node and grad mode.

An instance of a Function is its node in the graph. `Function.apply` runs `forward` on raw
backend arrays and, when grad mode is on and an input requires grad, links the output
tensor to the node. `backward` rules are written with tensor ops, so running them with
grad mode on (`create_graph=True`) records a graph of the gradient itself: that is how
second derivatives work. The graph walk itself lives in engine.py.
"""
from __future__ import annotations

import contextlib
import traceback

import numpy as np

from minigrad.tensor import Tensor


class _EngineState:
    """The engine's only global switches (named in the README). Instance attributes, not
    class ones: Python 3.11 specialises reading an instance's own attribute (every op
    reads two of these), not reading a class default through an instance."""

    def __init__(self):
        self.grad_enabled = True
        self.anomaly = False  # set by detect_anomaly()
        self.profiler = None  # a profiler.Profile while one is recording


STATE = _EngineState()


# ----------------------------------------------------------------------------- grad mode


class set_grad_enabled(contextlib.ContextDecorator):  # noqa: N801  (torch's name)
    """Context manager and decorator that turns graph recording on or off."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(STATE.grad_enabled)
        STATE.grad_enabled = self.mode

    def __exit__(self, *exc_info):
        STATE.grad_enabled = self._previous.pop()
        return False


class no_grad(set_grad_enabled):  # noqa: N801
    """Build no graph inside: `with mg.no_grad(): ...` or `@mg.no_grad()`."""

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):  # noqa: N801
    """Record a graph again inside a `no_grad` region."""

    def __init__(self):
        super().__init__(True)


def is_grad_enabled() -> bool:
    return STATE.grad_enabled


# ----------------------------------------------------------------------------- Function


class Function:
    """Base of every differentiable op.

    Subclasses implement `forward(self, *arrays, **params) -> array` and
    `backward(self, grad) -> grad or tuple of grads` (one per tensor input, None where no
    gradient flows). Forward saves what backward needs with `save_for_backward(*arrays)`;
    backward reads them back as tensors through `self.saved`: an input's array comes back
    as that input tensor and the output's array as the output, so a backward rule that uses
    them stays connected to the graph for higher derivatives.
    """

    _saved = None
    is_view = False  # True for ops whose output may alias input 0 (shares its version)
    # per-node state that is rarely set: class defaults keep apply() lean
    _freed = False
    _hooks = None
    _retained = None

    inputs: tuple[Tensor, ...]
    needs_input_grad: tuple[bool, ...]

    def forward(self, *arrays, **params):
        raise NotImplementedError

    def backward(self, grad: Tensor):
        raise NotImplementedError

    def save_for_backward(self, *arrays) -> None:
        self._saved = arrays

    @classmethod
    def apply(cls, *inputs: Tensor, **params) -> Tensor:
        if STATE.profiler is not None:
            return STATE.profiler.timed_apply(cls, inputs, params)
        node = cls.__new__(cls)
        try:
            # the common arities without building an argument list, and no empty
            # **params (which Python would unpack on every call)
            if len(inputs) == 1:
                out = node.forward(inputs[0].data, **params) if params else node.forward(
                    inputs[0].data)
            elif len(inputs) == 2 and not params:
                out = node.forward(inputs[0].data, inputs[1].data)
            else:
                out = node.forward(*[t.data for t in inputs], **params)
        except Exception as exc:
            # NumPy and CuPy reject each other's arrays in many ways; name the devices
            if isinstance(exc, (ValueError, TypeError, IndexError)) or _mixes_devices(inputs):
                raise _op_error(cls.__name__, inputs, exc) from exc
            raise
        if out.__class__ is not np.ndarray and isinstance(out, np.generic):
            out = np.asarray(out)  # NumPy returns scalars from 0-d arithmetic
        if STATE.grad_enabled:
            for t in inputs:
                if t._requires_grad:
                    return node._link(inputs, out)
        version = inputs[0]._version if cls.is_view and inputs else None
        return Tensor._wrap(out, None, version)

    def _link(self, inputs, out) -> Tensor:
        """Make this node the creator of `out`: remember inputs and their versions."""
        self.inputs = inputs
        needs, versions = [], []
        for t in inputs:
            needs.append(t._requires_grad)
            versions.append(t._version[0])
        self.needs_input_grad = needs
        self._versions = versions
        self._out_data = out
        if STATE.anomaly:
            self._trace = "".join(traceback.format_stack()[:-3])
        result = Tensor._wrap(out, self, inputs[0]._version if self.is_view else None)
        self._out_version = result._version
        self._out_version_at_save = result._version[0]
        return result

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def saved(self) -> tuple[Tensor, ...]:
        """The saved arrays as tensors (inputs and output keep their graph)."""
        if self._freed:
            raise RuntimeError(
                f"{self.name}: trying to backward through the graph a second time (or to "
                "read saved tensors after they were freed). Saved arrays are freed after "
                "backward; pass retain_graph=True to the first backward() to keep them."
            )
        return tuple(map(self._as_tensor, self._saved or ()))

    def _as_tensor(self, array) -> Tensor:
        index = 0
        for t in self.inputs:
            if t.data is array:
                if t._version[0] != self._versions[index]:
                    raise _modified_error(self.name, index, self._versions[index], t)
                return t
            index += 1
        if array is self._out_data:
            if self._out_version[0] != self._out_version_at_save:
                raise RuntimeError(
                    f"{self.name}: its output, needed for gradient computation, was modified "
                    "by an in-place operation after it was computed"
                )
            return Tensor._wrap(array, self if STATE.grad_enabled else None)
        return Tensor._wrap(array, None)

    def _free(self) -> None:
        # a node that saved nothing may run its backward again (as in PyTorch)
        self._freed = self._saved is not None
        self._saved = None
        self._out_data = None


def _modified_error(op: str, index: int, expected: int, t: Tensor) -> RuntimeError:
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


class detect_anomaly(contextlib.ContextDecorator):  # noqa: N801
    """Inside, a NaN or Inf produced by a backward rule raises, naming the op and showing
    where in the forward code that op was called. Slow: records a stack per op."""

    def __enter__(self):
        self._previous = STATE.anomaly
        STATE.anomaly = True

    def __exit__(self, *exc_info):
        STATE.anomaly = self._previous
        return False


from minigrad.engine import backward, grad, run_backward  # noqa: E402, F401  (re-export)
from minigrad.gradcheck import gradcheck, gradgradcheck  # noqa: E402  (re-export)

__all__ = [
    "Function",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
]
