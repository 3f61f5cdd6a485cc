"""Guards: when a recorded plan is valid for a call.

A plan replays one combination of what the eager run depended on:

- `call_key`: the arguments (each tensor's shape, dtype, strides, device and
  requires_grad, which arguments share memory; other values by equality, objects by
  identity), grad mode, anomaly mode and the kernel mode. Another key looks for (or
  captures) another plan.
- `Checks`, made after a capture: the tensors the step reached besides its arguments
  (parameters, buffers, gradients: the same objects, with arrays of the same type (so
  on the same device), shape, dtype and strides, still registered under their names
  in the modules it called),
  whether each gradient it read was None, and the plain attributes of every module it
  called (its training flag, a dropout probability, ...).
"""
from __future__ import annotations

import numpy as np

from minigrad.autograd import is_anomaly_enabled, is_grad_enabled
from minigrad.compile.recorder import Recorder
from minigrad.compile.traced import plain
from minigrad.kernels import get_mode
from minigrad.tensor import Tensor

_VALUES = (bool, int, float, str, bytes, type(None), complex)


def tensor_arguments(args: tuple, kwargs: dict) -> list[Tensor]:
    """The tensors among the arguments, in a fixed order (nested lists, tuples, dicts)."""
    found: list[Tensor] = []
    _collect((args, kwargs), found)
    return found


def _collect(value, found: list) -> None:
    if isinstance(value, Tensor):
        found.append(value)
    elif type(value) in (tuple, list):
        for v in value:
            _collect(v, found)
    elif type(value) is dict:
        for v in value.values():
            _collect(v, found)


def call_key(args: tuple, kwargs: dict, tensors: list[Tensor]) -> tuple:
    """What a plan is looked up by (see the module docstring)."""
    modes = (is_grad_enabled(), is_anomaly_enabled(), get_mode())
    if not args and not kwargs:
        return modes
    roots: dict[int, int] = {}
    sharing = tuple(roots.setdefault(id(_root(t.array)), len(roots)) for t in tensors)
    return (*modes, sharing, _signature(args), _signature(kwargs) if kwargs else None)


def _signature(value):
    if isinstance(value, Tensor):
        a = value.array
        return ("tensor", a.shape, a.dtype.str, a.strides, type(a), value._requires_grad)
    kind = type(value)
    if kind in _VALUES or isinstance(value, np.generic):
        return (kind, value)
    if kind in (tuple, list):
        return (kind, tuple(_signature(v) for v in value))
    if kind is dict:
        return (kind, tuple((k, _signature(v)) for k, v in value.items()))
    return ("object", id(value))


def argument_objects(args: tuple, kwargs: dict) -> list:
    """The arguments a key knows by identity (not tensors, not plain values): a plan
    holds them, so that no other object can take their id while it lives."""
    found: list = []

    def walk(value):
        kind = type(value)
        if kind in (tuple, list):
            for v in value:
                walk(v)
        elif kind is dict:
            for v in value.values():
                walk(v)
        elif kind not in _VALUES and not isinstance(value, (Tensor, np.generic)):
            found.append(value)

    walk((args, kwargs))
    return found


def _root(array):
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


class Checks:
    """What a plan assumes of the tensors and modules outside its arguments."""

    def __init__(self, recorder: Recorder, externals: list):
        # the array's type is its device: numpy.ndarray or cupy.ndarray
        self.arrays = [(e.tensor, e.attribute, e.shape, e.dtype, e.strides,
                        type(plain(recorder.keep_of(e.slot))))
                       for e in externals if e.argument is None]
        self.grads = []  # (tensor or None, argument position or None, whether it was None)
        for tensor, was_none in recorder.grad_start.values():
            if was_none is None:
                continue
            argument = recorder.arguments.get(id(tensor))
            if argument is None:
                self.grads.append((tensor, None, was_none))
            else:
                self.grads.append((None, argument[0], was_none))
        self.registered = recorder.registered  # (module's parameter dict, name, tensor)
        # (a module's attribute dict, a name, its value): one entry per plain attribute
        self.attributes = [(vars(module), name, value) for module, attributes
                           in recorder.rollback.module_states()
                           for name, value in attributes.items()]

    def hold(self, tensors: list[Tensor]) -> bool:
        for tensor, attribute, shape, dtype, strides, kind in self.arrays:
            owner = tensor if attribute == "array" else tensor.grad
            if owner is None:
                return False
            a = owner.array
            if type(a) is not kind or a.shape != shape or a.dtype != dtype or \
                    a.strides != strides:
                return False
        for tensor, position, was_none in self.grads:
            leaf = tensor if tensor is not None else tensors[position]
            if (leaf.grad is None) != was_none:
                return False
        for registry, name, tensor in self.registered:
            if registry.get(name) is not tensor:
                return False
        for attributes, name, value in self.attributes:
            if attributes.get(name, _MISSING) != value:
                return False
        return True


_MISSING = object()
