"""Guards: when a recorded plan is valid for a call.

A plan replays one combination of what the eager run depended on:

- the call key (`call_facts`): the arguments (each tensor's shape, dtype, strides, device and
  requires_grad, which arguments share memory; other values by equality, objects by
  identity), grad mode, anomaly mode and the kernel mode. Another key looks for (or
  captures) another plan.
- `Checks`, made after a capture: the tensors the step reached besides its arguments
  (parameters, buffers, gradients: the same objects, with arrays of the same type (so
  on the same device), shape, dtype and strides, requiring grad or not as they did,
  still registered under their names in the modules it called),
  whether each gradient it read was None, the attributes of every module it called
  (values.py: its training flag, a dropout probability by value, lists and dicts item by
  item, an activation function, a tensor that is neither parameter nor buffer, each
  submodule by identity; how many it has of each), that those modules have no forward
  hooks (a hook is not replayed; the compiled module's own run around the replay), and
  the attributes of objects passed as arguments, compared the same way (modules passed
  so are checked as called ones; optimizers, schedulers and generators are read live),
  and the plain values the user's own code read through globals and attribute chains
  (`scale`, `self.cfg.scale`: python_reads.py).

Arguments are walked into tuples, lists, dicts, namedtuples and dataclasses: a tensor in
any of them is an argument, read from that call.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from minigrad.autograd.grad_mode import MODES
from minigrad.compile.recorder import Recorder
from minigrad.compile.rollback import sizes_of
from minigrad.compile.traced import plain
from minigrad.compile.values import MISSING, PLAIN, remember, same
from minigrad.generator import Generator
from minigrad.kernels import get_mode
from minigrad.nn.modules.module import Module
from minigrad.optim.lr_scheduler_base import LRScheduler
from minigrad.optim.optimizer import Optimizer
from minigrad.tensor import Tensor


def call_facts(args: tuple, kwargs: dict) -> tuple[list[Tensor], tuple]:
    """The tensors among the arguments, in a fixed order (nested containers, `_items`),
    and the call key a plan is looked up by (see the module docstring), in one pass."""
    modes = (MODES.grad_enabled, MODES.anomaly, get_mode())
    if not args and not kwargs:
        return [], modes
    tensors: list[Tensor] = []
    # ("memory", id of the memory a tensor views) or ("tensor", id of the tensor) -> a number
    roots: dict[tuple, int] = {}
    sharing: list[int] = []
    signature = _signature(args, tensors, roots, sharing)
    keywords = _signature(kwargs, tensors, roots, sharing) if kwargs else None
    return tensors, (*modes, tuple(sharing), signature, keywords)


def _signature(value, tensors: list, roots: dict, sharing: list):
    """What the key holds of one argument; its tensors join `tensors`, and the first
    tensor viewing the same memory joins `sharing`."""
    if isinstance(value, Tensor):
        tensors.append(value)
        a = value.array
        memory = roots.setdefault(("memory", id(_root(a))), len(roots))
        sharing.append((memory, roots.setdefault(("tensor", id(value)), len(roots))))
        return ("tensor", a.shape, a.dtype.str, a.strides, type(a), value._requires_grad)
    kind = type(value)
    if kind in PLAIN or isinstance(value, np.generic):
        return (kind, value)
    items = _items(value)
    if items is not None:
        return (kind, tuple((k, _signature(v, tensors, roots, sharing)) for k, v in items))
    return ("object", id(value))


def _items(value) -> list | None:
    """(key, value) of what an argument holds, for the containers the key walks into
    (tuple, list, dict, namedtuple, dataclass); None for any other value."""
    kind = type(value)
    if kind in (tuple, list) or (isinstance(value, tuple) and hasattr(kind, "_fields")):
        return list(enumerate(value))
    if kind is dict:
        return list(value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    return None


def argument_objects(args: tuple, kwargs: dict) -> list:
    """The arguments a key knows by identity (not tensors, not plain values): a plan
    holds them, so that no other object can take their id while it lives."""
    found: list = []

    def walk(value):
        items = _items(value)
        if items is not None:
            for _, v in items:
                walk(v)
        elif type(value) not in PLAIN and not isinstance(value, (Tensor, np.generic)):
            found.append(value)

    walk((args, kwargs))
    return found


def _root(array):
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


class Checks:
    """What a plan assumes of the tensors and modules outside its arguments.

    `hold(tensors)` is generated code, one comparison per fact, with the captured
    objects as its globals (`source` is its text):

        def hold(tensors):
            a = c0.array
            if type(a) is not c1 or a.shape != (4, 4) or a.dtype != c2 or a.strides != (16, 4):
                return False
            owner = c0.grad
            if owner is None:
                return False
            ...
            if (tensors[0].grad is None) is not True:
                return False
            if c5.get('weight') is not c6:
                return False
            if c7.get('training', _MISSING) != c8:
                return False
            return True
    """

    def __init__(self, recorder: Recorder, externals: list):
        self._globals: dict = {"_MISSING": MISSING, "_same": same, "_sizes": sizes_of}
        lines = ["def hold(tensors):"]
        for e in externals:
            if e.argument is None:
                # the array's type is its device: numpy.ndarray or cupy.ndarray
                lines += self._array(e.tensor, e.attribute, e.shape, e.dtype, e.strides,
                                     type(plain(recorder.keep_of(e.slot))))
                if e.attribute == "array":
                    lines += _unless(f"{self._name(e.tensor)}._requires_grad is not "
                                     f"{e.tensor._requires_grad}")
        for tensor, was_none in recorder.grad_start.values():
            if was_none is None:
                continue
            argument = recorder.arguments.get(id(tensor))
            leaf = self._name(tensor) if argument is None else f"tensors[{argument[0]}]"
            lines += _unless(f"({leaf}.grad is None) is not {was_none!r}")
        for registry, name, tensor in recorder.registered:
            lines += _unless(f"{self._name(registry)}.get({name!r}) is not "
                             f"{self._name(tensor)}")
        for module, state in recorder.rollback.module_states():
            lines += self._module(module, state, hooks_allowed=module is recorder.compiled_module)
        for read in recorder.python_reads:
            lines += self._read(read)
        for owner in recorder.argument_objects:
            if not isinstance(owner, _LIVE) and hasattr(owner, "__dict__"):
                attributes = self._name(vars(owner))
                lines += _unless(f"len({attributes}) != {len(vars(owner))}")
                for name, value in vars(owner).items():
                    lines += self._value(f"{attributes}.get({name!r}, _MISSING)",
                                         remember(value))
        lines.append("    return True")
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, "<minigrad checks>", "exec"), self._globals)  # noqa: S102
        self.hold = self._globals["hold"]

    def _array(self, tensor, attribute: str, shape, dtype, strides, kind) -> list[str]:
        """The statements checking one tensor's array (or its .grad's)."""
        if attribute == "array":
            lines = [f"    a = {self._name(tensor)}.array"]
        else:
            lines = [f"    owner = {self._name(tensor)}.grad", *_unless("owner is None"),
                     "    a = owner.array"]
        return lines + _unless(f"type(a) is not {self._name(kind)} or "
                               f"a.shape != {self._literal(shape)} or "
                               f"a.dtype != {self._name(dtype)} or "
                               f"a.strides != {self._literal(strides)}")

    def _module(self, module, state, hooks_allowed: bool) -> list[str]:
        """The statements checking a module the step called against its state then."""
        attributes = self._name(vars(module))
        lines = _unless(f"_sizes({self._name(module)}) != {state.sizes!r}")
        for name, value in state.attributes.items():
            lines += self._value(f"{attributes}.get({name!r}, _MISSING)", value)
        children = self._name(module._modules)
        for name, child in state.children.items():
            lines += _unless(f"{children}.get({name!r}) is not {self._name(child)}")
        if not hooks_allowed:
            name = self._name(module)
            lines += _unless(f"{name}._forward_hooks or {name}._forward_pre_hooks")
        return lines

    def _read(self, read) -> list[str]:
        """The statements checking one chain the user's code read (python_reads.py): each
        link, a lookup in a dict of attributes, against what it gave."""
        return [line for attributes, _, name, remembered in read.links
                for line in self._value(f"{self._name(attributes)}.get({name!r}, _MISSING)",
                                        remembered)]

    def _value(self, current: str, remembered) -> list[str]:
        """The statement checking a Python value against what `remember` made of it (a
        number or a string inline, as it is most attributes' value)."""
        if type(remembered) in PLAIN:
            return _unless(f"type(v := {current}) is not {self._name(type(remembered))} or "
                           f"v != {self._name(remembered)}")
        return _unless(f"not _same({current}, {self._name(remembered)})")

    def _literal(self, sizes: tuple) -> str:
        """A tuple of ints as source; a global for anything else."""
        if type(sizes) is tuple and all(type(size) is int for size in sizes):
            return repr(sizes)
        return self._name(sizes)

    def _name(self, value) -> str:
        """A global of the generated function standing for `value` (the object itself,
        so that identity checks compare with it)."""
        name = f"c{len(self._globals) - 1}"
        self._globals[name] = value
        return name


def _unless(condition: str) -> list[str]:
    return [f"    if {condition}:", "        return False"]


# objects a replay reads live (optimizers, schedulers, generators) or checks as modules
_LIVE = (Module, Optimizer, LRScheduler, Generator)
