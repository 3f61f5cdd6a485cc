"""Rollback: undo what the capture's eager run changed, so that the plan's first replay
starts from the same state (and a step that cannot be captured runs eagerly once).

The capture runs the step for real: parameters and buffers are updated in place,
gradients accumulated or replaced, optimizer and scheduler state advanced, random
numbers drawn. Each is remembered before its first change and put back by `restore`:
arrays in place (their identity is part of the plan), Python attributes by value. The
states of Python's `random` and NumPy's global generator are put back too; a step that
draws from them is not captured (`foreign_draws`): its numbers are Python values that a
plan would keep, where each eager call draws new ones.
"""
from __future__ import annotations

import copy
import random as python_random

import numpy as np

from minigrad import random
from minigrad.compile.traced import plain
from minigrad.compile.traced_device import is_array
from minigrad.compile.values import MISSING, recalled, remember, same
from minigrad.generator import Generator
from minigrad.nn.modules.hooks import HOOK_REGISTRIES
from minigrad.optim.lr_scheduler_base import LRScheduler
from minigrad.optim.optimizer import Optimizer


class Rollback:
    def __init__(self):
        self._arrays: dict[tuple, tuple] = {}  # memory_key(array) -> (array, copy)
        self._versions: dict[int, tuple] = {}  # id(tensor) -> (tensor, version)
        self._replayed_growth: dict[int, int] = {}  # id(tensor) -> growth in opaque calls
        self._grads: dict[int, tuple] = {}  # id(tensor) -> (tensor, grad)
        self._objects: dict[int, tuple] = {}  # id -> (object, its state)
        self._modules: dict[int, tuple] = {}  # id -> (module, its ModuleState)
        self._replayed: set[tuple] = set()  # (id of a module, attribute) set by a replay
        self._generators: dict[int, tuple] = {}  # id -> (generator, state)
        self._rng = random.get_rng_state()
        # the random states that are not minigrad's: what the step draws from them, a
        # replay would not draw again (foreign_draws)
        self._python_rng = python_random.getstate()
        self._numpy_rng = np.random.get_state()

    def array(self, array) -> None:
        if not getattr(array.flags, "writeable", True):
            return  # a broadcast view: nothing writes through it (its base is remembered)
        key = memory_key(array)
        if key not in self._arrays:
            self._arrays[key] = (array, array.copy())

    def version(self, tensor) -> None:
        if id(tensor) not in self._versions:
            self._versions[id(tensor)] = (tensor, tensor._version[0])

    def versions_now(self) -> dict:
        return {key: t._version[0] for key, (t, _) in self._versions.items()}

    def exclude_version_changes(self, before: dict) -> None:
        """Count the version changes since `before` (an opaque call's, which the replay
        makes again by running it) out of version_changes."""
        for key, (t, _) in self._versions.items():
            grown = t._version[0] - before.get(key, t._version[0])
            self._replayed_growth[key] = self._replayed_growth.get(key, 0) + grown

    def version_changes(self) -> list:
        """(tensor, how much its version grew outside opaque calls) for every tensor
        remembered: what a replay adds to each version counter."""
        changes = []
        for key, (t, start) in self._versions.items():
            growth = t._version[0] - start - self._replayed_growth.get(key, 0)
            if growth:
                changes.append((t, growth))
        return changes

    def grad(self, tensor, grad) -> None:
        if id(tensor) not in self._grads:
            self._grads[id(tensor)] = (tensor, grad)
            if grad is not None:
                self.array(plain(grad.array))

    def generator(self, generator: Generator) -> None:
        if id(generator) not in self._generators:
            self._generators[id(generator)] = (generator, generator.get_state())

    def module(self, module, replayed: str | None = None) -> None:
        """Remember a module's state; `replayed`: an attribute that a recorded call sets
        again at every replay (train() sets `training`), not a change of the step's."""
        if id(module) not in self._modules:
            self._modules[id(module)] = (module, ModuleState(module))
        if replayed is not None:
            self._replayed.add((id(module), replayed))

    def module_states(self) -> list[tuple]:
        """(module, its ModuleState before the step) for every module remembered."""
        return list(self._modules.values())

    def changed_modules(self) -> list[str]:
        """The attributes of modules the run changed ("Linear.calls", "Net.head")."""
        changed = []
        for module, before in self._modules.values():
            changed += [f"{type(module).__name__}.{name}" for name in before.changes(module)
                        if (id(module), name) not in self._replayed]
        return changed

    def object(self, target) -> None:
        """Remember the state of an optimizer, or of a scheduler and its optimizer."""
        if isinstance(target, LRScheduler):
            if id(target) not in self._objects:
                self._objects[id(target)] = (target, copy.deepcopy(
                    {k: v for k, v in vars(target).items() if k != "optimizer"}))
            target = target.optimizer
        if isinstance(target, Optimizer) and id(target) not in self._objects:
            for group in target.param_groups:
                for param in group["params"]:
                    self.array(plain(param.array))
            state = {param: {k: (v.copy() if is_array(v) else copy.copy(v))
                             for k, v in entries.items()}
                     for param, entries in target.state.items()}
            groups = [{k: copy.copy(v) for k, v in group.items() if k != "params"}
                      for group in target.param_groups]
            self._objects[id(target)] = (target, (state, groups))

    def foreign_draws(self) -> str | None:
        """Which random state outside minigrad the run drew from, if one: Python's
        `random` module or NumPy's global generator (np.random.rand, np.random.randint)."""
        if python_random.getstate() != self._python_rng:
            return "Python's random module (random.random, random.randint, ...)"
        numpy_rng = np.random.get_state()
        if (numpy_rng[2:] != self._numpy_rng[2:]
                or not np.array_equal(numpy_rng[1], self._numpy_rng[1])):
            return "NumPy's global random state (np.random.rand, np.random.randint, ...)"
        return None

    def restore(self) -> None:
        for array, saved in self._arrays.values():
            array[...] = saved
        for tensor, version in self._versions.values():
            tensor._version[0] = version
        for tensor, grad in self._grads.values():
            tensor.grad = grad
        for target, saved in self._objects.values():
            if isinstance(target, LRScheduler):
                vars(target).update(copy.deepcopy(saved))
            else:
                _restore_optimizer(target, *saved)
        for module, state in self._modules.values():
            state.restore(module)
        for generator, state in self._generators.values():
            generator.set_state(state)
        random.set_rng_state(self._rng)
        python_random.setstate(self._python_rng)
        np.random.set_state(self._numpy_rng)


def memory_key(array) -> tuple:
    """Which memory an array is, whatever object views it (a parameter's array and the
    plain view of its traced array are copied once): its address, layout and dtype."""
    address = (array.__array_interface__["data"][0] if isinstance(array, np.ndarray)
               else array.data.ptr)
    return address, array.shape, array.strides, array.dtype.str


class ModuleState:
    """What a module's forward reads besides its parameters and buffers: its attributes
    (its training flag, a dropout probability, an activation function, a list of
    sizes, a tensor that is neither; values.py), its submodules by name, and how many
    attributes, parameters, buffers and submodules it has (one added is a change)."""

    def __init__(self, module):
        self.attributes = {k: remember(v) for k, v in vars(module).items()
                           if k not in _REGISTRIES}
        self.children = dict(module._modules)
        self.sizes = sizes_of(module)

    def changes(self, module) -> list[str]:
        """The names whose values `module` no longer has."""
        names = [name for name, value in self.attributes.items()
                 if not same(vars(module).get(name, MISSING), value)]
        names += [name for name in vars(module)
                  if name not in self.attributes and name not in _REGISTRIES]
        return names + [name for name in self.children.keys() | module._modules.keys()
                        if self.children.get(name) is not module._modules.get(name)]

    def restore(self, module) -> None:
        for name in set(vars(module)) - set(self.attributes) - _REGISTRIES:
            del vars(module)[name]
        vars(module).update({name: recalled(value) for name, value in self.attributes.items()})
        module._modules.clear()
        module._modules.update(self.children)


def sizes_of(module) -> tuple:
    """How many attributes, parameters, buffers and submodules a module has."""
    return (len(vars(module)), len(module._parameters), len(module._buffers),
            len(module._modules))


# a module's dicts of parameters, buffers, submodules and hooks: the same objects always
_REGISTRIES = frozenset({"_parameters", "_buffers", "_modules", *HOOK_REGISTRIES})


def _restore_optimizer(optimizer: Optimizer, state: dict, groups: list) -> None:
    for param in list(optimizer.state):
        if param not in state:
            del optimizer.state[param]
    for param, entries in state.items():
        current = optimizer.state.setdefault(param, {})
        for key, value in entries.items():
            if is_array(value) and is_array(current.get(key)):
                current[key][...] = value
            else:
                current[key] = value
    for group, saved in zip(optimizer.param_groups, groups, strict=True):
        group.update(saved)
