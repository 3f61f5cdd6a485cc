"""A plan's steps as the source of one Python function, so that a replay is one call that
makes the array calls in order, with no per-step dispatch.

Each slot is a local variable (`s12`). The function reads the slots it does not compute
from the slot list at its start (the external slots the replay bound, and for a
backward, what its forward kept), runs one statement or a few per step, drops each slot
with `del` after the last step that uses it (and clears it in the list too, for one read
from there), and writes the slots its caller reads afterwards (the outputs, what a
backward needs) back into the list. Functions, classes and other objects the steps call
or pass are names in the function's globals (`Addmm_forward`, `np_add`, `fused1`, `c3`);
numbers, strings and tuples of them are written as literals.

A step becomes:

    s6 = Addmm_forward(Addmm(), s1, s4, s5)      a unit (an op's forward)
    s7, s9 = fused1(s6, s3)                      a call (NumPy, a fused kernel, ...)
    value = int(s12)                             a guard: a value read into Python,
    if value != 3: _guard_failed(...)            checked again at each replay
    Optimizer_step(c4)                           an opaque call (Python, [python])
    tensor2.grad = _wrap(s26)                    a `.grad = ...`
    s5 = folded                                  a folded step (folding.py): its array

and on the CPU, where a result has a buffer kept between replays (buffers.py):

    s6 = Addmm_into(buffers[2], s1, s4, s5)      a matrix product written into it
    s7 = buffers[3]                              a fused kernel's result: the kernel
    fused1_kernel(s6, s3, s7)                    called on its buffer
"""
from __future__ import annotations

import itertools
import keyword
import linecache
import math
import re

import numpy as np

from minigrad.compile.buffers import INTO
from minigrad.compile.schedule import (
    has_ref,
    slots_in,
    step_outputs,
    step_reads,
    tensor_slots_in,
)
from minigrad.compile.steps import (
    Call,
    Folded,
    Fused,
    Guard,
    GuardFailed,
    Opaque,
    Ref,
    SetGrad,
    TensorRef,
    Unit,
)
from minigrad.tensor import Tensor

_asarray = np.asarray  # NumPy's own (a capture in another thread wraps it)
_LITERALS = (bool, int, str, type(None))
# the generated function's locals and the builtins it calls: never a bound name
_RESERVED = re.compile(r"s\d+|slots|buffers|node|kept|value|replay|output|vars|isinstance")
_NUMBERS = itertools.count()  # one file name per generated function, for tracebacks


def _guard_failed(label: str, expected, value):
    raise GuardFailed(f"{label} was {expected!r} when captured, {value!r} now")


def _collector(kept: list):
    """A save_for_backward that keeps the arrays an op's forward saves."""
    return lambda *arrays: kept.extend(arrays)


def as_array(value):
    """A NumPy scalar as a 0-d array, as eager's ops return one; arrays (NumPy's or
    CuPy's) as they are."""
    if type(value) is np.ndarray or not hasattr(value, "__cuda_array_interface__"):
        return _asarray(value)
    return value


class ReplayFunction:
    """The generated functions of a list of steps: `function(slots)` runs them on the
    slot list, `output(slots)` then builds the call's result; `source` is their text."""

    def __init__(self, steps: list, frees: list, output, buffers: dict | None = None):
        """`frees`: per step, the slots to drop after it (schedule.last_uses); `output`:
        the template of what a call returns, which `output(slots)` builds after it;
        `buffers`: slot -> index of its buffer (buffers.py), the arrays that
        `function(slots, buffers)` writes those slots' results into."""
        self._globals = {"_asarray": as_array, "_generic": np.generic,
                         "_wrap": Tensor._wrap, "_guard_failed": _guard_failed,
                         "_collector": _collector, "_empty": np.empty}
        self._buffers = buffers or {}
        self._names: dict[int, str] = {}  # id of an object -> its name in _globals
        body: list[str] = []
        computed: set[int] = set()  # slots a step before sets (locals from there on)
        loaded: list[int] = []  # slots read from the list at the start
        for index, (step, dropped) in enumerate(zip(steps, frees, strict=True)):
            for slot in _read_slots(step):
                if slot not in computed and slot not in loaded:
                    loaded.append(slot)
            body.append(f"# step {index}")
            body += self._statements(step)
            computed.update(step_outputs(step))
            if dropped:
                body.append("del " + ", ".join(f"s{slot}" for slot in dropped))
                body += [f"slots[{slot}] = None" for slot in dropped if slot in loaded]
        freed = {slot for dropped in frees for slot in dropped}
        self.loaded = loaded  # the slots it reads from the list
        self.stored = sorted(computed - freed)  # the slots it writes into the list
        self.dropped_loaded = [slot for slot in loaded if slot in freed]  # set to None
        body += [f"slots[{slot}] = s{slot}" for slot in self.stored]
        lines = ["def replay(slots, buffers=()):"]
        lines += [f"    s{slot} = slots[{slot}]" for slot in loaded]
        lines += [f"    {line}" for line in body] or ["    pass"]
        lines += ["", "", "def output(slots):"]
        lines += [f"    s{slot} = slots[{slot}]" for slot in sorted(set(slots_in(output)))]
        # one tensor per slot: a tensor the step returns twice comes back as one object
        lines += [f"    t{slot} = _wrap(s{slot})" for slot in sorted(set(tensor_slots_in(output)))]
        lines.append(f"    return {self._expression(output, tensor='t{}')}")
        self.source = "\n".join(lines) + "\n"
        filename = f"<minigrad replay {next(_NUMBERS)}>"
        # the source in linecache: tracebacks through a replay show its lines
        linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True),
                                     filename)
        exec(compile(self.source, filename, "exec"), self._globals)  # noqa: S102
        self.function = self._globals["replay"]
        self.output = self._globals["output"]

    # ------------------------------------------------------------------ steps
    def _statements(self, step) -> list[str]:
        if isinstance(step, Fused) and any(s in self._buffers for s in slots_in(step.out)):
            return self._fused_into(step)
        if isinstance(step, Call):
            return self._call(step)
        if isinstance(step, Unit):
            if step.out in self._buffers:
                into = self._name(INTO[step.cls], f"{step.cls.__name__}_into")
                return [f"s{step.out} = " + self._invocation(
                    into, step.args, step.params, first=f"buffers[{self._buffers[step.out]}]")]
            return self._unit(step)
        if isinstance(step, Guard):
            return self._guard(step)
        if isinstance(step, Folded):
            return [f"s{step.out} = {self._name(step.value, 'folded')}"]
        if isinstance(step, Opaque):
            call = self._invocation(self._name(step.fn, step.label), step.args, step.kwargs)
            if isinstance(step.out, TensorRef):
                return [f"s{step.out.slot} = {call}.array"]
            return [call]
        return [self._set_grad(step)]

    def _call(self, step: Call) -> list[str]:
        call = self._invocation(self._name(step.fn, step.label), step.args, step.kwargs)
        out = step.out
        if isinstance(out, Ref):
            return [f"s{out.slot} = _asarray({call})" if step.scalar_out
                    else f"s{out.slot} = {call}"]
        if type(out) not in (tuple, list) or not has_ref(out):
            return [call]
        lines = [f"{_target(out)} = {call}"]
        if step.scalar_out:  # NumPy scalars among the results: 0-d arrays, as eager's
            lines += [f"s{slot} = _asarray(s{slot})" for slot in slots_in(out)]
        return lines

    def _fused_into(self, step: Fused) -> list[str]:
        """A fused kernel called on its results' buffers (new arrays for those without):

            s7 = buffers[3]
            s9 = _empty((128, 64), float32)
            fused1_kernel(s6, s3, s7, s9)
        """
        lines, results = [], []
        for slot, (shape, dtype) in zip(slots_in(step.out), step.results, strict=True):
            if slot in self._buffers:
                lines.append(f"s{slot} = buffers[{self._buffers[slot]}]")
            else:
                lines.append(f"s{slot} = _empty({shape!r}, {self._constant(dtype)})")
            results.append(f"s{slot}")
        kernel = self._name(step.kernel, f"{step.label}_kernel")
        inputs = [self._expression(a) for a in step.args]
        lines.append(f"{kernel}({', '.join([*inputs, *results])})")
        return lines

    def _unit(self, step: Unit) -> list[str]:
        cls = self._name(step.cls, step.cls.__name__)
        forward = self._name(step.forward, f"{step.cls.__name__}_forward")
        out = f"s{step.out}"
        as_array = f"if isinstance({out}, _generic): {out} = _asarray({out})"
        if not (step.saved or step.attributes):
            call = self._invocation(forward, step.args, step.params, first=f"{cls}()")
            return [f"{out} = {call}", as_array]
        lines = [f"node = {cls}()"]
        if step.saved:
            lines += ["kept = []", "node.save_for_backward = _collector(kept)"]
        call = self._invocation(forward, step.args, step.params, first="node")
        lines += [f"{out} = {call}", as_array]
        lines += [f"s{slot} = _asarray(kept[{position}])"
                  for slot, position in step.saved.items()]
        for slot, path in step.attributes.items():
            indices = "".join(f"[{self._constant(index)}]" for index in path[1:])
            lines.append(f"s{slot} = _asarray(vars(node)[{path[0]!r}]{indices})")
        lines.append("del node, kept" if step.saved else "del node")
        return lines

    def _guard(self, step: Guard) -> list[str]:
        convert = self._name(step.convert, getattr(step.convert, "__name__", "convert"))
        arguments = "".join(f", {self._constant(a)}" for a in step.args)
        expected = self._constant(step.value)
        differs = f"value != {expected}"
        is_nan = step.value != step.value  # a NaN captured matches a NaN at replay
        if is_nan is True:
            differs += " and not value != value"
        elif is_nan is not False:
            differs += f" and not (value != value and {expected} != {expected})"
        return [f"value = {convert}(s{step.slot}{arguments})",
                f"if {differs}:",
                f"    _guard_failed({step.label!r}, {expected}, value)"]

    def _set_grad(self, step: SetGrad) -> str:
        leaf = (self._name(step.leaf, "tensor") if step.leaf_slot is None
                else f"s{step.leaf_slot}")
        value = "None" if step.value is None else f"_wrap(s{step.value.slot})"
        return f"{leaf}.grad = {value}"

    # ------------------------------------------------------------------ expressions
    def _invocation(self, fn: str, args: tuple, keywords: dict,
                    first: str | None = None) -> str:
        """`fn(first, *args, **keywords)` as source, its arguments from templates."""
        parts = [] if first is None else [first]
        parts += [self._expression(a) for a in args]
        if all(type(k) is str and k.isidentifier() and not keyword.iskeyword(k)
               for k in keywords):
            parts += [f"{k}={self._expression(v)}" for k, v in keywords.items()]
        elif keywords:
            parts.append(f"**{self._expression(keywords)}")
        return f"{fn}({', '.join(parts)})"

    def _expression(self, template, tensor: str = "_wrap(s{})") -> str:
        """Source for the value a template stands for (a new tuple, list or dict where
        it refers to slots; the captured object itself where it does not); `tensor` is
        the source of a TensorRef's tensor, its slot number left as {}."""
        if isinstance(template, Ref):
            return f"s{template.slot}"
        if isinstance(template, TensorRef):
            return tensor.format(template.slot)
        if not has_ref(template):
            return self._constant(template)
        kind = type(template)
        if kind is dict:
            items = ", ".join(f"{self._constant(k)}: {self._expression(v, tensor)}"
                              for k, v in template.items())
            return "{" + items + "}"
        items = ", ".join(self._expression(t, tensor) for t in template)
        if kind is list:
            return f"[{items}]"
        return f"({items},)" if len(template) == 1 else f"({items})"

    def _constant(self, value) -> str:
        """A literal for a number, a string or a tuple of them; else a global's name."""
        if type(value) in _LITERALS:
            return repr(value)
        if type(value) is float and math.isfinite(value):
            return repr(value)  # repr round-trips a float exactly
        if type(value) is tuple and all(type(v) in _LITERALS for v in value):
            return repr(value)
        return self._name(value, "c")

    def _name(self, value, hint: str) -> str:
        """The name `value` has in the function's globals (bound on first use)."""
        name = self._names.get(id(value))
        if name is not None:
            return name
        base = re.sub(r"\W", "_", hint).strip("_") or "c"
        if base[0].isdigit() or _RESERVED.fullmatch(base) or keyword.iskeyword(base):
            base = f"c_{base}"
        name, number = base, 1
        while name in self._globals:
            number += 1
            name = f"{base}{number}"
        self._globals[name] = value
        self._names[id(value)] = name
        return name


def _read_slots(step) -> tuple:
    """Every slot a step's statements name before they set any: what it reads, and for a
    `.grad = ...` on an argument, the slot holding the call's tensor."""
    if isinstance(step, SetGrad) and step.leaf_slot is not None:
        return (*step_reads(step), step.leaf_slot)
    return step_reads(step)


def _target(template) -> str:
    """An assignment target unpacking a result into the slots of its template."""
    if isinstance(template, Ref):
        return f"s{template.slot}"
    if type(template) in (tuple, list) and has_ref(template):
        inner = ", ".join(_target(t) for t in template)
        return f"({inner},)" if len(template) == 1 else f"({inner})"
    return "_"
