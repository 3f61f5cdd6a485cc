"""Plan: a recorded step made ready to replay.

Each recorded step becomes one small function of the slot list (`program`), in the
order schedule.py gives them (guards before lasting effects); the replay (replay.py)
binds the external slots from their tensors and runs the program. Runs of elementwise
steps become one generated kernel each (fusion.py). Slots no later step reads are dropped
as soon as they are last used, as eager frees them.

A guard that fails raises GuardFailed: the caller then runs the step eagerly, after
putting back the random generators the replay drew from (`random_sources`).
"""
from __future__ import annotations

import operator

import numpy as np

from minigrad.compile.fusion import fuse, fusion_enabled
from minigrad.compile.schedule import hoist_guards, last_uses, slots_in
from minigrad.compile.steps import (
    Call,
    External,
    Fused,
    Guard,
    Opaque,
    Ref,
    SetGrad,
    TensorRef,
    Unit,
)
from minigrad.generator import Generator
from minigrad.tensor import Tensor

_asarray = np.asarray  # NumPy's own (a capture in another thread wraps it)


class GuardFailed(Exception):
    """A value the capture read differs at replay: the call runs eagerly instead."""


class Plan:
    """The steps of one capture, compiled (see the module docstring)."""

    def __init__(self, steps: list, externals: list[External], slot_count: int,
                 slot_roots: dict, output, keep: set = frozenset(),
                 arrays: dict | None = None, first_group: int = 1):
        """`arrays`: the array each slot held during the capture; fusion (fusion.py)
        needs their shapes and dtypes, and is skipped without them. `first_group`: the
        number of the plan's first fused group in printouts."""
        self.steps = hoist_guards(steps, slot_roots, {e.slot for e in externals})
        if arrays is not None and fusion_enabled():
            self.steps = fuse(self.steps, arrays, slot_roots,
                              set(slots_in(output)) | set(keep), first_group)
        self.externals = externals
        self.slot_count = slot_count
        self.output = output
        self.build_output = _builder(output)
        self.program = _compile(self.steps, last_uses(self.steps, output, keep))
        self.random_sources = _random_before_guards(self.steps)
        self.version_changes: list = []  # (tensor, growth) applied after a replay

    def run(self, slots: list) -> None:
        """Run every step on `slots` (external slots bound)."""
        for run, frees in self.program:
            run(slots)
            for slot in frees:
                slots[slot] = None
        for tensor, growth in self.version_changes:
            tensor._version[0] += growth

    def fused_groups(self) -> list[Fused]:
        """The steps that each run a generated kernel for a group of elementwise steps."""
        return [step for step in self.steps if isinstance(step, Fused)]

    def describe(self) -> str:
        """The plan as text: one line per external slot and per step."""
        lines = [f"plan: {len(self.externals)} external slots, {self.slot_count} slots, "
                 f"{len(self.steps)} steps"]
        for e in self.externals:
            lines.append(f"  s{e.slot} = external {e.attribute} of a tensor "
                         f"{e.shape} {np.dtype(e.dtype).name}")
        for index, step in enumerate(self.steps):
            lines.append(f"  {index:4d}  {_describe(step)}")
        lines.append(f"  return {_show(self.output)}")
        sources: dict[str, str] = {}  # a kernel's source -> the group that printed it
        for step in self.steps:
            if isinstance(step, Fused):
                lines += _describe_group(step, sources)
        return "\n".join(lines)


def build_outputs(template, slots: list, replaced: dict | None = None):
    """The value a template of outputs stands for: a tensor around each TensorRef's
    array, or the tensor `replaced` gives for its slot."""
    if isinstance(template, TensorRef):
        if replaced and template.slot in replaced:
            return replaced[template.slot]
        return Tensor._wrap(slots[template.slot])
    if isinstance(template, Ref):
        return slots[template.slot]
    kind = type(template)
    if kind in (tuple, list):
        return kind(build_outputs(t, slots, replaced) for t in template)
    if kind is dict:
        return {k: build_outputs(v, slots, replaced) for k, v in template.items()}
    return template


# ----------------------------------------------------------------------------- compiling


def _builder(template):
    """A function slots -> the value the template stands for."""
    if isinstance(template, Ref):
        return operator.itemgetter(template.slot)
    if isinstance(template, TensorRef):
        slot = template.slot
        return lambda slots: Tensor._wrap(slots[slot])
    kind = type(template)
    if kind in (tuple, list) and _has_ref(template):
        if all(isinstance(t, Ref) or not _has_ref(t) for t in template):
            # flat: copy the constants, fill in the slots
            constants = list(template)
            filled = [(i, t.slot) for i, t in enumerate(template) if isinstance(t, Ref)]

            def flat(slots):
                values = constants.copy()
                for position, slot in filled:
                    values[position] = slots[slot]
                return kind(values)
            return flat
        parts = [_builder(v) for v in template]
        return lambda slots: kind([part(slots) for part in parts])
    if kind is dict and _has_ref(template):
        constants = {k: v for k, v in template.items() if not _has_ref(v)}
        parts = [(k, _builder(v)) for k, v in template.items() if _has_ref(v)]

        def keywords(slots):
            values = constants.copy()
            for key, part in parts:
                values[key] = part(slots)
            return values
        return keywords
    return lambda slots: template


def _arguments(template: tuple):
    """A function slots -> the positional arguments (a tuple)."""
    if all(isinstance(t, Ref) for t in template):
        if len(template) == 1:
            slot = template[0].slot
            return lambda slots: (slots[slot],)
        return operator.itemgetter(*(t.slot for t in template))
    return _builder(tuple(template))


def _keywords(template: dict):
    if not template:
        return None
    return _builder(template)


def _has_ref(template) -> bool:
    if isinstance(template, (Ref, TensorRef)):
        return True
    if type(template) in (tuple, list):
        return any(_has_ref(t) for t in template)
    if type(template) is dict:
        return any(_has_ref(t) for t in template.values())
    return False


def _compile(steps: list, frees: list) -> list:
    return [(_runner(step), tuple(slots)) for step, slots in zip(steps, frees, strict=True)]


def _runner(step):
    if isinstance(step, Call):
        return _call_runner(step)
    if isinstance(step, Unit):
        return _unit_runner(step)
    if isinstance(step, Guard):
        return _guard_runner(step)
    if isinstance(step, Opaque):
        return _opaque_runner(step)
    return _set_grad_runner(step)


def _store(out, scalar: bool):
    """A function (slots, result) that stores a call's result in its slots."""
    if isinstance(out, Ref):
        slot = out.slot
        if scalar:
            def store_scalar(slots, result):
                slots[slot] = _asarray(result)
            return store_scalar

        def store(slots, result):
            slots[slot] = result
        return store
    if type(out) in (tuple, list) and _has_ref(out):
        parts = [_store(o, scalar) for o in out]

        def store_each(slots, result):
            for part, value in zip(parts, result, strict=True):
                part(slots, value)
        return store_each
    return None


def _call_runner(step: Call):
    fn, store = step.fn, _store(step.out, step.scalar_out)
    args, kwargs = _arguments(step.args), _keywords(step.kwargs)
    if kwargs is None and store is not None:
        def run(slots):
            store(slots, fn(*args(slots)))
    elif kwargs is None:
        def run(slots):
            fn(*args(slots))
    else:
        def run(slots):
            result = fn(*args(slots), **kwargs(slots))
            if store is not None:
                store(slots, result)
    return run


def _unit_runner(step: Unit):
    cls, forward, out = step.cls, step.forward, step.out
    args, params = _arguments(step.args), _keywords(step.params)
    saved, attributes = list(step.saved.items()), list(step.attributes.items())
    if not (saved or attributes):
        if params is None:
            def run_plain(slots):
                result = forward(cls(), *args(slots))
                slots[out] = _asarray(result) if isinstance(result, np.generic) else result
            return run_plain

        def run_with_parameters(slots):
            result = forward(cls(), *args(slots), **params(slots))
            slots[out] = _asarray(result) if isinstance(result, np.generic) else result
        return run_with_parameters

    def run(slots):
        node = cls()
        kept = []
        if saved:
            node.save_for_backward = lambda *arrays: kept.extend(arrays)
        result = forward(node, *args(slots), **(params(slots) if params else {}))
        slots[out] = _asarray(result) if isinstance(result, np.generic) else result
        for slot, position in saved:
            slots[slot] = _asarray(kept[position])
        for slot, path in attributes:
            value = vars(node)[path[0]]
            for index in path[1:]:
                value = value[index]
            slots[slot] = _asarray(value)
    return run


def _guard_runner(step: Guard):
    slot, convert, extra, expected, label = (step.slot, step.convert, step.args, step.value,
                                             step.label)

    def run(slots):
        value = convert(slots[slot], *extra)
        if value != expected and not (value != value and expected != expected):  # NaN
            raise GuardFailed(f"{label} was {expected!r} when captured, {value!r} now")
    return run


def _opaque_runner(step: Opaque):
    fn, args, kwargs = step.fn, _builder(step.args), _keywords(step.kwargs)
    out = step.out.slot if isinstance(step.out, TensorRef) else None

    def run(slots):
        result = fn(*args(slots), **(kwargs(slots) if kwargs else {}))
        if out is not None:
            slots[out] = result.array
    return run


def _set_grad_runner(step: SetGrad):
    leaf, leaf_slot = step.leaf, step.leaf_slot
    value = None if step.value is None else step.value.slot

    def run(slots):
        target = leaf if leaf_slot is None else slots[leaf_slot]
        target.grad = None if value is None else Tensor._wrap(slots[value])
    return run


def _random_before_guards(steps: list) -> list:
    """The generators drawn from before some guard: a failed guard puts them back (None
    stands for minigrad's default generators)."""
    sources, drawn = {}, False
    for step in steps:
        if step.effect == "random":
            owner = step.args[0] if step.args and isinstance(step.args[0], Generator) else None
            sources[id(owner)] = owner
        elif isinstance(step, Guard) and sources:
            drawn = True
    return list(sources.values()) if drawn else []


# ----------------------------------------------------------------------------- text


def _describe(step) -> str:
    if isinstance(step, Call):
        effect = f"   [{step.effect}]" if step.effect else ""
        return f"{_show(step.out)} = {step.label}({_show_arguments(step)}){effect}"
    if isinstance(step, Unit):
        sides = "".join(f", s{slot}" for slot in (*step.saved, *step.attributes))
        return (f"s{step.out}{sides} = {step.cls.__name__}.forward"
                f"({_show_arguments(step)})")
    if isinstance(step, Guard):
        return f"check {step.label} of s{step.slot} == {step.value!r}"
    if isinstance(step, Opaque):
        return f"{_show(step.out) + ' = ' if step.out else ''}{step.label}(...)   [python]"
    value = "None" if step.value is None else f"s{step.value.slot}"
    return f"{type(step.leaf).__name__}{tuple(step.leaf.shape)}.grad = {value}   [python]"


def _describe_group(step: Fused, sources: dict) -> list[str]:
    """What a fused group replaced, what it reads and stores, and its kernel."""
    outputs = list(slots_in(step.out))
    lines = [f"{step.label}: {len(step.replaced)} recorded steps in one kernel:"]
    lines += [f"      {_describe(replaced)}" for replaced in step.replaced]
    lines.append("    inputs: " + (", ".join(f"in{i} = s{slot}" for i, slot
                                            in enumerate(step.reads)) or "none"))
    lines.append("    outputs: " + ", ".join(f"out{i} = s{slot}" for i, slot
                                           in enumerate(outputs)))
    lines.append("    not materialised: " + (", ".join(f"s{slot}" for slot in step.hidden)
                                             or "none"))
    if step.source in sources:
        lines.append(f"    kernel: the same as {sources[step.source]}'s")
        return lines
    sources[step.source] = step.label
    lines.append("    kernel:")
    lines += [f"      {line}".rstrip() for line in step.source.splitlines()]
    return lines


def _show_arguments(step) -> str:
    keywords = step.kwargs if isinstance(step, Call) else step.params
    parts = [_show(a) for a in step.args]
    parts += [f"{k}={_show(v)}" for k, v in keywords.items()]
    return ", ".join(parts)


def _show(template) -> str:
    if isinstance(template, (Ref, TensorRef)):
        return f"s{template.slot}"
    if type(template) in (tuple, list):
        inner = ", ".join(_show(t) for t in template)
        return f"({inner})" if type(template) is tuple else f"[{inner}]"
    if type(template) is dict:
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in template.items()) + "}"
    if isinstance(template, np.dtype):
        return template.name
    text = repr(template)
    return text if len(text) <= 40 else text[:37] + "..."
