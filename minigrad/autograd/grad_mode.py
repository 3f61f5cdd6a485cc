"""Grad mode and anomaly mode: whether ops record a graph, and whether backward checks its
gradients for NaN and Inf.

Both belong to a thread, as in PyTorch: `with mg.no_grad():` in one thread does not stop
another thread from building its graph. A new thread starts with grad mode on and anomaly
mode off.
"""
from __future__ import annotations

import contextlib
import functools
import threading


class _ThreadModes(threading.local):
    """Each thread sees its own attributes of the one instance; a thread that has not set
    one reads the class attribute, its default."""

    grad_enabled = True
    anomaly = False


MODES = _ThreadModes()


def is_grad_enabled() -> bool:
    """True when ops record a graph in this thread."""
    return MODES.grad_enabled


class _ModeSwitch:
    """Base of the grad-mode context managers: sets `MODES.grad_enabled` to `self.mode`
    inside a `with` block, restoring the previous value on exit. Used as a decorator, it
    does the same around every call (each call saves its own previous value, so recursion
    and threads are safe)."""

    mode: bool

    def __enter__(self):
        self._previous = MODES.grad_enabled
        MODES.grad_enabled = self.mode

    def __exit__(self, *exc_info):
        MODES.grad_enabled = self._previous
        return False

    def __call__(self, function):
        mode = self.mode

        @functools.wraps(function)
        def in_mode(*args, **kwargs):
            previous = MODES.grad_enabled
            MODES.grad_enabled = mode
            try:
                return function(*args, **kwargs)
            finally:
                MODES.grad_enabled = previous

        return in_mode


class no_grad(_ModeSwitch):  # noqa: N801  (torch's name)
    """Build no graph inside: `with mg.no_grad(): ...` or `@mg.no_grad()`."""

    mode = False


class enable_grad(_ModeSwitch):  # noqa: N801
    """Record a graph again inside a `no_grad` region."""

    mode = True


class inference_mode(_ModeSwitch):  # noqa: N801
    """`inference_mode()` (or `inference_mode(True)`) records no graph, like no_grad;
    `inference_mode(False)` changes nothing. (PyTorch's also marks the tensors made inside
    so that autograd refuses them later; minigrad's tensors need no such mark.)"""

    def __init__(self, mode: bool = True):
        self.mode = False if mode else None

    def __enter__(self):
        self._previous = MODES.grad_enabled
        if self.mode is not None:
            MODES.grad_enabled = self.mode

    def __call__(self, function):
        return function if self.mode is None else super().__call__(function)


class set_grad_enabled(_ModeSwitch):  # noqa: N801
    """Turn graph recording on or off: as a call, from now on in this thread
    (`mg.set_grad_enabled(False)`); as a context manager or decorator, inside it only."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._before_call = MODES.grad_enabled
        MODES.grad_enabled = self.mode  # takes effect at the call, as in PyTorch

    def __enter__(self):
        self._previous = self._before_call

    def __call__(self, function):
        MODES.grad_enabled = self._before_call  # a decorator changes nothing until called
        return super().__call__(function)


def is_anomaly_enabled() -> bool:
    """True inside `detect_anomaly()` in this thread."""
    return MODES.anomaly


class detect_anomaly(contextlib.ContextDecorator):  # noqa: N801
    """Inside, a NaN or Inf produced by a backward rule raises, naming the op and showing
    where in the forward code that op was called. Slow: records a stack per op."""

    def __enter__(self):
        self._previous = MODES.anomaly
        MODES.anomaly = True

    def __exit__(self, *exc_info):
        MODES.anomaly = self._previous
        return False
