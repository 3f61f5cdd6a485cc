"""Slots: the numbered arrays of a capture, and which tensors the external ones are.

Every array the step computes with is a slot. An *external* slot is the array of a tensor
that existed before the call (an argument, a parameter, a buffer, a gradient), read from
that tensor at each replay; it is bound the first time the capture meets the tensor (as
an argument, when its module is called, when an op is applied to it, when its `.array`
is read), and from then on the tensor holds a TracedArray view of it (traced.py). Every
other slot is made by a recorded step (recorder.py).

A *template* is an argument structure in which each traced array is replaced by its
`Ref` (steps.py): what a step is called with at each replay.
"""
from __future__ import annotations

import weakref

import numpy as np

from minigrad.compile.array_info import ArrayInfo
from minigrad.compile.rollback import Rollback
from minigrad.compile.steps import External, GraphBreak, Ref, TensorRef, user_line
from minigrad.compile.traced import TracedArray, plain
from minigrad.compile.traced_device import (
    is_array,
    is_device_array,
    is_plain_array,
    is_traced,
    root,
    traced_view,
)
from minigrad.nn.parallel.distributed import DistributedDataParallel
from minigrad.tensor import Tensor

# NumPy's own functions: the capture replaces them with recording ones (patches.py)
_asarray = np.asarray


class Slots:
    """The slots of one capture and the bindings of the external ones.

    The capture holds no array of the step: an array the step frees is freed (the
    capture's memory is the eager step's, not every intermediate array at once). So what
    is known by an object's id (`slot_of`, `created`, the numbered memory of
    `slot_roots`) forgets the object when it dies, before another object can take its
    id; what the plan needs of a slot's array is its ArrayInfo."""

    def __init__(self):
        self.depth = 0  # > 0 inside a recorded call: what runs there is not recorded
        self.externals: list[External] = []
        self.slot_count = 0
        self.slot_of: dict[int, int] = {}  # id(TracedArray) -> slot, while it lives
        self.slot_roots: dict[int, int] = {}  # slot -> number of the memory it views
        self._infos: dict[int, ArrayInfo] = {}  # slot -> what its array was
        self._alive: dict[int, object] = {}  # slot -> a reference to its traced array
        self._memory = _MemoryNumbers()
        self.external_roots: set[int] = set()  # memory numbers behind external slots
        # id -> tensor made during the capture, while it lives
        self.created: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
        self.swapped: list = []  # (tensor, its array) for every tensor made traced
        # (tensor, its grad_fn, its accumulator) for every tensor read with a graph made
        # before the step: a leaf while the step is captured (`cut`)
        self.cut_graphs: list = []
        self.modules: dict = {}  # id -> module called during the step
        self.compiled_module = None  # the module whose forward is compiled, if one is
        self.argument_objects: list = []  # arguments other than tensors, values, containers
        self.python_reads: list = []  # chains the user's code read (python_reads.py)
        self.registered: list = []  # (a module's parameter or buffer dict, name, tensor)
        self.rollback = Rollback()
        self.arguments: dict[int, tuple] = {}  # id(tensor) -> (position, its object slot)

    def _new_slot(self, traced: TracedArray, keep: bool = False) -> int:
        """A slot for a traced array; `keep`: hold it for the whole capture (an external
        array's view, whose memory lives anyway)."""
        slot = self.slot_count
        self.slot_count += 1
        self.slot_of[id(traced)] = slot
        self.slot_roots[slot] = self._memory.number(root(traced))
        self._infos[slot] = ArrayInfo.of(plain(traced), is_device_array(traced))
        self._alive[slot] = (_strong(traced) if keep else
                             _reference(traced, _forgetting(self.slot_of, id(traced), slot)))
        return slot

    def keep_of(self, slot: int) -> TracedArray:
        """The traced array of a slot, which must still be alive (an output, an external
        array, a gradient the step left)."""
        traced = self._alive[slot]()
        if traced is None:
            raise RuntimeError(f"mg.compile: the array of slot {slot} was freed during the "
                               "capture, but its value is needed")
        return traced

    def recorded_arrays(self) -> dict[int, ArrayInfo]:
        """What each slot's array was (fusion reads the shapes, dtypes, layouts and
        devices, and compiles its kernels on stand-ins of the same types)."""
        return dict(self._infos)

    def slot(self, array) -> int:
        """The slot of a traced array; GraphBreak for any other array."""
        slot = self.slot_of.get(id(array))
        if slot is None:
            self.refuse(f"an array of shape {tuple(array.shape)} ({array.dtype}) computed "
                        "outside the captured operations")
        return slot

    def add_arguments(self, tensors: list) -> None:
        """The call's tensor arguments: each gets a slot for the tensor object itself
        (the replay puts that call's tensor there) and its array is bound."""
        for position, t in enumerate(tensors):
            if id(t) not in self.arguments:
                self.arguments[id(t)] = (position, self.slot_count)
                self.slot_count += 1
                self.bind(t, "array")

    def bind(self, tensor: Tensor, attribute: str) -> None:
        """Make tensor.array (or tensor.grad.array) an external slot: it is read from the
        tensor at every replay, and traced from now on in this capture."""
        owner = tensor if attribute == "array" else tensor.__dict__["grad"]
        self.depth += 1  # reading .array here binds nothing
        try:
            array = owner.array
            if not is_plain_array(array):
                self.refuse(f"a tensor whose array is a {type(array).__name__} (mg.compile "
                            "captures NumPy and CuPy arrays)")
            if tensor._hooks:
                self.refuse(f"a tensor of shape {array.shape} with hooks (their Python runs "
                            "only while the step is captured)")
            traced = traced_view(array)
            owner.array = traced
        finally:
            self.depth -= 1
        slot = self._new_slot(traced, keep=True)
        position = self.arguments.get(id(tensor), (None,))[0]
        self.externals.append(External(slot, tensor, attribute, array.shape, array.dtype,
                                       array.strides, position))
        self.external_roots.add(self._memory.number(root(array)))
        self.rollback.array(array)
        self.rollback.version(owner)
        self.swapped.append((owner, array))
        if attribute == "array" and tensor.grad_fn is not None:
            self.cut(tensor)

    def cut(self, tensor: Tensor) -> None:
        """Make a tensor the step reads, and whose graph was made before it, a leaf until
        the capture ends: the backward the capture records for the step's outputs then
        stops at it, as the compiled node's does (whose gradient for it flows on through
        its own graph, in the eager backward), rather than running that graph too."""
        self.cut_graphs.append((tensor, tensor.grad_fn, tensor.__dict__.get("_accumulator")))
        tensor.grad_fn = None

    def restore_graphs(self) -> None:
        """Give every cut tensor its graph back."""
        for tensor, grad_fn, accumulator in reversed(self.cut_graphs):
            tensor.grad_fn = grad_fn
            if accumulator is None:
                tensor.__dict__.pop("_accumulator", None)
            else:
                tensor._accumulator = accumulator
        self.cut_graphs.clear()

    def first_read(self, tensor: Tensor, array: np.ndarray):
        """`tensor.array` read while it is a plain array: bind the tensor (GraphBreak for
        one made during the capture from an array computed outside it)."""
        if id(tensor) in self.created:
            return array  # refused where the array is used
        self.bind(tensor, "array")
        return tensor.array

    def bind_inputs(self, tensors) -> None:
        """Bind the tensors a Function is applied to that the capture has not seen yet."""
        for t in tensors:
            data = t.array
            if is_traced(data) and id(data) in self.slot_of:
                continue
            if id(t) in self.created:
                self.refuse(f"a tensor of shape {tuple(t.shape)} made from an array "
                            "computed outside the captured operations")
            self.bind(t, "array")

    def bind_module(self, module) -> None:
        """Bind every parameter and buffer of a module the step calls."""
        if id(module) in self.modules:
            return
        if isinstance(module, DistributedDataParallel):
            self.refuse("DistributedDataParallel (communication between processes is not "
                        "captured; compile the module it wraps)")
        for m in module.modules():
            self.modules[id(m)] = m
            self.rollback.module(m)
            for registry in (m._parameters, m._buffers):
                for name, t in registry.items():
                    if t is None or id(t) in self.created:
                        continue
                    self.registered.append((registry, name, t))
                    if is_plain_array(t.array):
                        self.bind(t, "array")

    # ------------------------------------------------------------------ templates
    def template(self, value, output: bool = False):
        """`value` with every traced array replaced by its Ref (and tensors, inside an
        opaque call, by TensorRefs); GraphBreak for an array the capture cannot place.
        In the step's `output`, an argument stands for that call's tensor (a Ref to its
        object slot) and a parameter or buffer it read for itself, so that a replay
        returns those tensors, not new ones around their arrays."""
        if is_array(value):
            return Ref(self.slot(value))
        if isinstance(value, Tensor):
            if output and id(value) in self.arguments:
                return Ref(self.arguments[id(value)][1])
            if output and any(e.tensor is value and e.attribute == "array"
                              for e in self.externals):
                return value
            data = value.array
            if is_traced(data) and id(data) in self.slot_of:
                return TensorRef(self.slot_of[id(data)])
            return value  # a tensor from outside, taken as it is (a parameter, say)
        kind = type(value)
        if kind in (tuple, list):
            return kind(self.template(v, output) for v in value)
        if kind is dict:
            return {k: self.template(v, output) for k, v in value.items()}
        if kind is slice and any(is_array(p) for p in
                                 (value.start, value.stop, value.step)):
            self.refuse("a slice whose bounds are arrays")
        return value

    def _opaque_template(self, value):
        """The arguments of an opaque call: tensors made during the step become
        TensorRefs, the call's arguments Refs to their object slots, others stay."""
        if isinstance(value, Tensor):
            if id(value) in self.created:
                return self.template(value)
            argument = self.arguments.get(id(value))
            return value if argument is None else Ref(argument[1])
        kind = type(value)
        if kind in (tuple, list):
            return kind(self._opaque_template(v) for v in value)
        if kind is dict:
            return {k: self._opaque_template(v) for k, v in value.items()}
        if is_array(value):
            self.refuse("an array passed to a library call replayed as Python")
        return value

    def _plain(self, value, arrays: dict):
        """`value` with traced arrays made plain; arrays maps each plain view's id back to
        its traced array (a call that returns one of them returns that traced array)."""
        if is_traced(value):
            view = plain(value)
            arrays[id(view)] = value
            return view
        kind = type(value)
        if kind in (tuple, list):
            return kind(self._plain(v, arrays) for v in value)
        if kind is dict:
            return {k: self._plain(v, arrays) for k, v in value.items()}
        if isinstance(value, Tensor):
            return self._plain(value.array, arrays)
        return value

    def _result(self, value, arrays: dict):
        """Register what a call returned: (the traced result, its template, whether
        NumPy returned a scalar where the capture made a 0-d array)."""
        if is_array(value):
            known = arrays.get(id(value))
            if known is None:
                known = traced_view(value)
                self._new_slot(known)
            return known, Ref(self.slot_of[id(known)]), False
        if isinstance(value, np.generic):
            traced, template, _ = self._result(_asarray(value), arrays)
            return traced, template, True
        if type(value) in (tuple, list):
            parts = [self._result(v, arrays) for v in value]
            return (type(value)(p[0] for p in parts), type(value)(p[1] for p in parts),
                    any(p[2] for p in parts))
        return value, value, False

    def refuse(self, what: str):
        raise GraphBreak(f"{what}, at {user_line()}")

    def _is_external_memory(self, array) -> bool:
        return is_array(array) and self._memory.known(root(array)) in self.external_roots


class _MemoryNumbers:
    """A number for each array that owns memory, never given twice in a capture (an id
    can be: a freed array's id goes to the next array made)."""

    def __init__(self):
        self._numbers: dict[int, int] = {}  # id(owner) -> its number, while it lives
        self._owners: list = []  # references keeping the forgetting callbacks alive

    def known(self, owner) -> int | None:
        """The number of an array seen before (None for one not seen)."""
        return self._numbers.get(id(owner))

    def number(self, owner) -> int:
        """The array's number, a new one for an array not seen before."""
        known = self.known(owner)
        if known is not None:
            return known
        number = len(self._owners)
        self._numbers[id(owner)] = number
        self._owners.append(_reference(owner, _forgetting(self._numbers, id(owner), number)))
        return number


def _forgetting(table: dict, key: int, value: int):
    """A weakref callback: drop table[key] if it still holds `value` (the dead object's
    entry, not that of a later object given the same id)."""
    def forget(_reference):
        if table.get(key) == value:
            del table[key]
    return forget


def _reference(obj, on_death):
    """A weak reference to obj calling on_death when obj dies; a strong one (a callable
    returning obj) for an array type without weak references, which then lives as long
    as the capture."""
    try:
        return weakref.ref(obj, on_death)
    except TypeError:
        return _strong(obj)


def _strong(obj):
    """A callable returning obj, as a weak reference's call does, holding obj alive."""
    return lambda: obj


def flattened(value):
    """The items of nested tuples and lists, None left out."""
    if type(value) in (tuple, list):
        for v in value:
            yield from flattened(v)
    elif value is not None:
        yield value
