"""The recorder: what a capture writes down while the step runs once, eagerly.

Every array the step computes with is a numbered *slot* (slots.py): an *external* one, the
array of a tensor that existed before the call, or the output of a recorded *step*. The
steps, in the order the eager run made them:

- Call: one array-level call, `fn(*args, **kwargs)`, whose arguments are slots and
  constants: a NumPy ufunc or function, an ndarray method, an array creation, a random
  draw; or a whole op's forward (`Unit`), run on plain arrays as eager runs it.
- Guard: a value the step read into Python (`bool(a)`); the replay reads it again and
  gives up (running eagerly) when it differs.
- Opaque: a library call replayed as Python because it reads Python values each step
  (Optimizer.step, LRScheduler.step, clip_grad_norm_).
- SetGrad: `tensor.grad = ...`, as AccumulateGrad and zero_grad do it.

Anything the recorder cannot account for (an array from outside the captured values, a
value printed, a tensor read with .item()) ends the capture with GraphBreak.
"""
from __future__ import annotations

import numpy as np

from minigrad.compile.slots import Slots, flattened
from minigrad.compile.steps import Call, Guard, Opaque, Ref, SetGrad, TensorRef, Unit
from minigrad.compile.traced import TracedArray, plain
from minigrad.compile.traced_device import is_array, is_plain_array, is_traced, traced_view
from minigrad.tensor import Tensor

_asarray = np.asarray  # NumPy's own (the capture wraps np.asarray: patches.py)


class Recorder(Slots):
    """Slots and steps of one capture (see the module docstring)."""

    def __init__(self):
        super().__init__()
        self.steps: list = []
        # id(leaf) -> (leaf, whether its .grad was None when first touched; None: set first)
        self.grad_start: dict[int, tuple] = {}
        self.unit_arrays: dict[int, TracedArray] | None = None  # inside a Unit: plain -> traced
        self.unit_saved: list | None = None
        self.backward_calls = 0  # backward() and autograd.grad() calls during the step
        self.tracing_backward = False  # the capture records a compiled forward's backward

    # ------------------------------------------------------------------ steps
    def call(self, fn, args, kwargs, writes=(), effect=None):
        """Run fn on the plain arrays, record it, and return its result traced."""
        args_template, kwargs_template = self.template(args), self.template(kwargs)
        arrays: dict = {}
        plain_args, plain_kwargs = self._plain(args, arrays), self._plain(kwargs, arrays)
        self.depth += 1
        try:
            result = fn(*plain_args, **plain_kwargs)
        finally:
            self.depth -= 1
        args_refs = _refs(args_template, kwargs_template)
        if type(result) in (bool, int, float, complex) and args_refs:
            return self._python_result(fn, args_template, kwargs_template, result, args_refs)
        traced, out, scalar = self._result(result, arrays)
        written = tuple(self.slot(w) for w in flattened(writes))
        if effect is None and any(self._is_external_memory(w) for w in flattened(writes)):
            effect = "writes"
        self.steps.append(Call(fn, args_template, kwargs_template, out, scalar, effect,
                               _label(fn), args_refs, written))
        return traced

    def _python_result(self, fn, args_template, kwargs_template, result, reads: tuple):
        """A call that returns a Python number computed from arrays (np.array_equal,
        np.count_nonzero): recorded with a guard on the number, as a value read."""
        slot = self._new_slot(np.ndarray.view(_asarray(result), TracedArray))
        label = _label(fn)
        self.steps.append(Call(fn, args_template, kwargs_template, Ref(slot), True, None,
                               label, reads))
        self.steps.append(Guard(slot, type(result), (), result, f"{label}()"))
        return result

    def unit(self, forward, node, arrays: tuple, params: dict):
        """Record an op's forward as one step and run it on plain arrays, so that it takes
        the kernels eager takes. What it saves for backward and stores on the node is
        traced, so that backward rules computing on it are recorded."""
        args_template, params_template = self.template(arrays), self.template(params)
        mapping: dict = {}
        plain_args, plain_params = self._plain(arrays, mapping), self._plain(params, mapping)
        outer = self.unit_arrays, self.unit_saved
        self.unit_arrays, self.unit_saved = mapping, []
        self.depth += 1
        try:
            out = forward(node, *plain_args, **plain_params)
        finally:
            self.depth -= 1
            saved = self.unit_saved
            self.unit_arrays, self.unit_saved = outer
        traced_out = self._traced(out, mapping)
        out_slot = self._register(traced_out)
        step = Unit(type(node), forward, args_template, params_template, out_slot,
                    reads=_refs(args_template, params_template))
        for position, array in enumerate(saved):
            if id(array) not in self.slot_of:
                step.saved[self._register(array)] = position
        for name, value in list(vars(node).items()):
            vars(node)[name] = self._node_attribute(step, value, mapping, (name,))
        self.steps.append(step)
        return traced_out

    def _register(self, traced: TracedArray) -> int:
        slot = self.slot_of.get(id(traced))
        return self._new_slot(traced) if slot is None else slot

    @staticmethod
    def _traced(value, mapping: dict) -> TracedArray:
        """The one traced array standing for an array (or NumPy scalar) a Unit made."""
        traced = mapping.get(id(value))
        if traced is None:
            array = _asarray(value) if isinstance(value, np.generic) else value
            traced = traced_view(array)
            mapping[id(value)] = traced
        return traced

    def _node_attribute(self, step: Unit, value, mapping: dict, path: tuple):
        """An attribute forward stored on its node, with its arrays traced (new ones
        become slots the replay reads back from the node)."""
        if (isinstance(value, np.generic) or is_array(value)) and not is_traced(value):
            traced = self._traced(value, mapping)
            if id(traced) not in self.slot_of:
                step.attributes[self._register(traced)] = path
            return traced
        if type(value) in (tuple, list):
            return type(value)(self._node_attribute(step, v, mapping, (*path, i))
                               for i, v in enumerate(value))
        return value

    def saved_in_unit(self, arrays: tuple) -> tuple:
        """save_for_backward inside a Unit: the traced arrays standing for `arrays`."""
        traced = tuple(self._traced(a, self.unit_arrays)
                       if isinstance(a, np.generic) or is_array(a) else a for a in arrays)
        self.unit_saved.extend(t for t in traced if is_traced(t))
        return traced

    def value_read(self, array: TracedArray, name: str, convert, args: tuple):
        self.depth += 1  # a GPU array's value is copied to the host: nothing to record
        try:
            value = convert(plain(array), *args)
        finally:
            self.depth -= 1
        self.steps.append(Guard(self.slot(array), convert, args, value,
                                f"{name}() of an array"))
        return value

    def opaque(self, fn, args: tuple, kwargs: dict, tensors: list):
        """Run a library call for real, on plain arrays, and record it to run again."""
        args = tuple(list(a) if _is_iterator(a) else a for a in args)
        self.depth += 1
        try:
            self.rollback.object(args[0] if args else None)
        finally:
            self.depth -= 1
        args_template = self._opaque_template(args)
        kwargs_template = self._opaque_template(kwargs)
        made_plain = []
        for t in tensors:
            for owner in (t, t.__dict__.get("grad")):
                if owner is not None and is_traced(owner.array):
                    made_plain.append((owner, owner.array))
                    owner.array = plain(owner.array)
        versions = self.rollback.versions_now()
        self.depth += 1
        try:
            result = fn(*args, **kwargs)
        finally:
            self.depth -= 1
            for owner, traced in made_plain:
                owner.array = traced
            self.rollback.exclude_version_changes(versions)
        out = None
        if isinstance(result, Tensor) and is_plain_array(result.array):
            traced = traced_view(result.array)
            out = TensorRef(self._new_slot(traced))
            result.array = traced
        self.steps.append(Opaque(fn, args_template, kwargs_template, out, _label(fn),
                                 _refs(args_template, kwargs_template)))
        return result

    def grad_read(self, tensor: Tensor):
        """`tensor.grad`, remembered (and its array bound) the first time it is read."""
        value = tensor.__dict__.get("grad")
        if id(tensor) not in self.grad_start and id(tensor) not in self.created:
            self.grad_start[id(tensor)] = (tensor, value is None)
            self.depth += 1  # the gradient's array is bound as the leaf's, not its own
            try:
                self.rollback.grad(tensor, value)
                unbound = value is not None and is_plain_array(value.array)
            finally:
                self.depth -= 1
            if unbound:
                self.bind(tensor, "grad")
        return value

    def grad_write(self, tensor: Tensor, value) -> None:
        if id(tensor) in self.created:
            return
        if id(tensor) not in self.grad_start:
            # its first touch replaces the gradient, which the step therefore never reads
            # (`zero_grad`): put back as None, so that it is freed here, as eagerly; the
            # replay, or an eager run after a failed capture, replaces it first too
            self.rollback.grad(tensor, None)
            self.grad_start[id(tensor)] = (tensor, None)
        ref = None
        if value is not None:
            ref = self.template(value)
            if not isinstance(ref, TensorRef):
                self.refuse(".grad set to a tensor from outside the captured values")
            ref = Ref(ref.slot)
        argument = self.arguments.get(id(tensor))
        self.steps.append(SetGrad(tensor, ref, None if argument is None else argument[1]))

    def backward_called(self) -> None:
        """The step runs a backward: the AccumulateGrad nodes it reaches run inside the
        plan, where their post-accumulate hooks (DistributedDataParallel's) would not."""
        self.backward_calls += 1
        if self.tracing_backward:
            return
        for e in self.externals:
            if e.tensor._post_accumulate_hooks:
                self.refuse(f"a backward reaching a tensor of shape {e.shape} with "
                            "post-accumulate hooks (DistributedDataParallel's: compile the "
                            "forward, not the whole step)")



def _refs(*templates) -> tuple:
    """Every slot a template reads."""
    found = []

    def walk(value):
        if isinstance(value, (Ref, TensorRef)):
            found.append(value.slot)
        elif type(value) in (tuple, list):
            for v in value:
                walk(v)
        elif type(value) is dict:
            for v in value.values():
                walk(v)

    for t in templates:
        walk(t)
    return tuple(found)


def _label(fn) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:
        name = repr(fn)
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc):
        return f"np.{owner.__name__}.{fn.__name__}"
    if isinstance(fn, np.ufunc):
        return f"np.{fn.__name__}"
    return name


def _is_iterator(value) -> bool:
    return hasattr(value, "__next__")
