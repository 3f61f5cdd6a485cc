"""What a capture records: slots referred to inside templates of arguments, the kinds
of step (recorder.py says what each is), GraphBreak, which ends a capture, and
GuardFailed, which ends a replay.

A template is an argument structure (tuples, lists, dicts, constants) in which `Ref(n)`
stands for the array in slot n, and `TensorRef(n)` for a tensor around it.
"""
from __future__ import annotations

import linecache
import os
import sys
import traceback
from dataclasses import dataclass, field

import numpy as np

from minigrad.tensor import Tensor

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))


class GraphBreak(BaseException):  # noqa: N818  (not an error of the user's program)
    """The step does something a replay cannot redo; `reason` names it and the line.
    A BaseException, so that the step's own `except Exception` does not swallow it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class GuardFailed(Exception):
    """A value the capture read differs at replay: the call runs eagerly instead."""


@dataclass(frozen=True)
class Ref:
    """A slot inside a template of arguments."""

    slot: int


@dataclass(frozen=True)
class TensorRef:
    """A tensor around a slot's array, inside the arguments of an opaque call."""

    slot: int


@dataclass
class Call:
    fn: object
    args: tuple
    kwargs: dict
    out: object  # the result's template: Ref, a tuple of templates, or a constant
    scalar_out: bool  # NumPy returned a scalar: the replay makes it a 0-d array
    effect: str | None  # None, "writes" (external memory) or "random"
    label: str
    reads: tuple = ()  # the slots among the arguments
    writes: tuple = ()  # the slots it writes into (out=, x[i] = v, ...)


@dataclass
class Fused(Call):
    """A run of elementwise steps as one generated kernel (fusion.py): `fn(*inputs)`
    returns the arrays of `out`, the group's results that are read after it."""

    replaced: tuple = ()  # the recorded steps it stands for, in their order
    hidden: tuple = ()  # slots computed inside the kernel and never stored
    source: str = ""  # the generated kernel's Python source
    number: int = 0  # the group's number in the plan printout
    kernel: object = None  # the kernel itself, `kernel(*inputs, *results)` (CPU groups)
    results: tuple = ()  # (shape, dtype) of each array of `out`


@dataclass
class Unit:
    """An op's forward as one call: `forward(cls(), *args, **params)`."""

    cls: type
    forward: object
    args: tuple
    params: dict
    out: int
    saved: dict = field(default_factory=dict)  # slot -> position among the saved arrays
    attributes: dict = field(default_factory=dict)  # slot -> (name, index path)
    reads: tuple = ()
    effect = None


@dataclass
class Folded:
    """A step whose result is the same at every replay, computed once when the plan was
    built (folding.py): the replay only names `value`, the array kept."""

    out: int
    value: object
    replaced: object  # the recorded step it stands for
    effect = None
    reads = ()


@dataclass
class Guard:
    slot: int
    convert: object
    args: tuple
    value: object
    label: str
    effect = None


@dataclass
class Opaque:
    fn: object
    args: tuple
    kwargs: dict
    out: object
    label: str
    effect = "python"
    reads: tuple = ()


@dataclass
class SetGrad:
    leaf: Tensor
    value: Ref | None
    leaf_slot: int | None = None  # for an argument: the slot holding the call's tensor
    effect = "python"


@dataclass
class External:
    """Slot `slot` is `tensor.array` ("array") or `tensor.grad.array` ("grad")."""

    slot: int
    tensor: Tensor
    attribute: str
    shape: tuple
    dtype: object
    strides: tuple
    argument: int | None = None  # the position of the tensor among the call's arguments


def user_stacklevel() -> int:
    """The stacklevel at which a warning that its caller issues names the first frame
    outside minigrad: the user's call of a compiled function or module."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def user_line() -> str:
    """The innermost line of the stack outside minigrad and NumPy, with its code."""
    for frame in reversed(traceback.extract_stack()):
        path = os.path.abspath(frame.filename)
        if not (path.startswith(_PACKAGE) or path.startswith(_NUMPY)):
            code = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
            return f"{frame.filename}:{frame.lineno} ({code})"
    return "(no line outside minigrad)"
