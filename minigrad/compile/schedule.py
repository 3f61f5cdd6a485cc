"""The order a plan runs its steps in, and when it drops each slot.

A guard (a value the step read into Python) must be checked before the replay changes
anything it could not undo. So `.grad = ...` steps wait until just before the next
opaque call (only Python code observes .grad), and a guard recorded after a lasting
effect (a write to external memory, an opaque call) moves, with the pure steps it
depends on, to before the first such effect. When that is impossible the step's control
flow depends on data it changed itself: GraphBreak.

`last_uses` gives, per step, the slots no later step (nor the output) reads: the replay
drops them there, as eager frees intermediates.
"""
from __future__ import annotations

from minigrad.compile.steps import (
    Call,
    Folded,
    GraphBreak,
    Guard,
    Opaque,
    Ref,
    SetGrad,
    TensorRef,
    Unit,
)


def step_reads(step) -> tuple:
    """The slots a step reads."""
    if isinstance(step, Guard):
        return (step.slot,)
    if isinstance(step, SetGrad):
        return () if step.value is None else (step.value.slot,)
    return step.reads


def step_outputs(step) -> list:
    """The slots a step sets."""
    if isinstance(step, Call):
        return list(slots_in(step.out))
    if isinstance(step, Unit):
        return [step.out, *step.saved, *step.attributes]
    if isinstance(step, Opaque) and step.out is not None:
        return [step.out.slot]
    if isinstance(step, Folded):
        return [step.out]
    return []


def slots_in(template):
    """The slots a template refers to."""
    return (ref.slot for ref in _refs_in(template))


def _refs_in(template):
    """The Refs and TensorRefs in a template."""
    if isinstance(template, (Ref, TensorRef)):
        yield template
    elif type(template) in (tuple, list):
        for t in template:
            yield from _refs_in(t)
    elif type(template) is dict:
        for t in template.values():
            yield from _refs_in(t)


def tensor_slots_in(template):
    """The slots a template's TensorRefs refer to (the tensors a replay makes)."""
    return (t.slot for t in _refs_in(template) if isinstance(t, TensorRef))


def has_ref(template) -> bool:
    """Whether a template refers to any slot."""
    return next(slots_in(template), None) is not None


def handed_to_python(steps: list, slot_roots: dict) -> set:
    """The memory numbers (slot_roots' values) Python code may keep a reference to: what
    opaque calls read and return, and what a `.grad =` stores."""
    roots = set()
    for step in steps:
        if isinstance(step, (Opaque, SetGrad)):
            roots.update(slot_roots.get(s) for s in step_reads(step))
            if isinstance(step, Opaque):
                roots.update(slot_roots.get(s) for s in slots_in(step.out))
    return roots


def last_uses(steps: list, output, keep) -> list:
    """Per step, the slots to drop after it: those no later step (nor the output) uses."""
    last: dict[int, int] = {}
    for index, step in enumerate(steps):
        for slot in (*step_reads(step), *step_outputs(step)):
            last[slot] = index
    protected = set(slots_in(output)) | set(keep)
    frees: list[list[int]] = [[] for _ in steps]
    for slot, index in last.items():
        if slot not in protected:
            frees[index].append(slot)
    return frees


def _early_clears(steps: list, grad_slots: dict) -> set[int]:
    """The `.grad = None` steps (zero_grad) that may stay where they are, ahead of guards
    that follow them: those clearing a gradient before anything else touches it (no
    opaque call, other `.grad =` or read of its array before). Eager frees the previous
    gradient there; held to the end, every gradient would live beside the step's
    activations. A guard failing after such a clear is safe: the eager rerun it causes
    clears that gradient itself before any use, and ends as eager would.
    `grad_slots`: the external slot of a gradient -> id of its tensor."""
    early, touched = set(), set()
    for step in steps:
        if isinstance(step, Opaque):
            break
        touched.update(grad_slots[s] for s in step_reads(step) if s in grad_slots)
        if isinstance(step, SetGrad):
            if step.value is None and step.leaf_slot is None and id(step.leaf) not in touched:
                early.add(id(step))
            touched.add(id(step.leaf))
    return early


def _sink_grad_writes(steps: list, early: set[int]) -> list:
    """Move every `.grad = ...` but the early clears to just before the next opaque call
    (or the end): only Python code observes .grad, so until then it may wait, and guards
    checked before it need not undo it. Of several for one tensor there, the last is
    kept."""
    ordered, waiting = [], {}  # id of the leaf -> its last .grad = ... (earlier ones die)
    for step in steps:
        if isinstance(step, SetGrad):
            key = id(step.leaf) if step.leaf_slot is None else ("argument", step.leaf_slot)
            waiting.pop(key, None)
            if id(step) in early:
                ordered.append(step)
            else:
                waiting[key] = step
            continue
        if isinstance(step, Opaque):
            ordered += waiting.values()
            waiting = {}
        ordered.append(step)
    return ordered + list(waiting.values())


def hoist_guards(steps: list, slot_roots: dict, externals: list) -> list:
    """Move every guard that follows a step with a lasting effect (a write to external
    memory, a change of Python state; not an early clear) to before the first such step,
    with the pure steps it depends on; GraphBreak when one of those cannot move."""
    grad_slots = {e.slot: id(e.tensor) for e in externals if e.attribute == "grad"}
    early = _early_clears(steps, grad_slots)
    return _hoisted(_sink_grad_writes(steps, early), slot_roots,
                    {e.slot for e in externals}, early)


def _hoisted(steps: list, slot_roots: dict, external_slots: set, early: set[int]) -> list:
    first = next((i for i, s in enumerate(steps)
                  if s.effect in ("writes", "python") and id(s) not in early), None)
    if first is None:
        return steps
    producer = {}
    for index, step in enumerate(steps):
        for slot in step_outputs(step):
            producer.setdefault(slot, index)
    hoisted: list[int] = []
    for index in range(first, len(steps)):
        if not isinstance(steps[index], Guard):
            continue
        cone = _cone(steps, index, producer)
        movable = all(steps[i].effect is None for i in cone if i >= first)
        written = {slot_roots.get(s) for i in range(first, index) for s in _written(steps[i])}
        reads_external = {slot_roots.get(s) for i in cone for s in step_reads(steps[i])
                          if s in external_slots}
        if not movable or (written & reads_external) or _opaque_between(steps, first, index):
            raise GraphBreak(f"{steps[index].label}: the step reads a value into Python "
                             "after changing state that value depends on (data-dependent "
                             "control flow)")
        hoisted += [i for i in sorted(cone) if i >= first and i not in hoisted]
        hoisted.append(index)
    if not hoisted:
        return steps
    moved = set(hoisted)
    return (steps[:first] + [steps[i] for i in hoisted]
            + [s for i, s in enumerate(steps) if i >= first and i not in moved])


def _cone(steps: list, index: int, producer: dict) -> set:
    """The steps whose results the step at `index` depends on."""
    cone, stack = set(), list(step_reads(steps[index]))
    while stack:
        made_by = producer.get(stack.pop())
        if made_by is not None and made_by not in cone:
            cone.add(made_by)
            stack.extend(step_reads(steps[made_by]))
    return cone


def _written(step) -> tuple:
    return step.writes if isinstance(step, Call) else ()


def _opaque_between(steps: list, start: int, end: int) -> bool:
    return any(isinstance(steps[i], Opaque) for i in range(start, end))


def guards_into_forward(forward: list, backward: list, grad_slot: int) -> tuple[list, list]:
    """The forward and backward of a compiled forward's node, with each guard of the
    backward that does not depend on the output gradient moved, with the steps it depends
    on, to the end of the forward: there a failed guard runs the call eagerly, where in
    backward it could only raise. (Cross-entropy's count of the rows not ignored, max
    pooling's check for NaN are such guards.)"""
    tainted_slots, tainted = {grad_slot}, set()
    for index, step in enumerate(backward):
        if any(slot in tainted_slots for slot in step_reads(step)):
            tainted.add(index)
            tainted_slots.update(step_outputs(step))
            tainted_slots.update(_written(step))
    producer = {}
    for index, step in enumerate(backward):
        for slot in step_outputs(step):
            producer.setdefault(slot, index)
    moved: set[int] = set()
    for index, step in enumerate(backward):
        if not isinstance(step, Guard) or index in tainted:
            continue
        cone = _cone(backward, index, producer)
        read = {slot for i in cone | {index} for slot in step_reads(backward[i])}
        overwritten = any(slot in read for i in tainted for slot in _written(backward[i]))
        if not (cone & tainted) and not overwritten:
            moved |= cone | {index}
    return (forward + [backward[i] for i in sorted(moved)],
            [step for i, step in enumerate(backward) if i not in moved])
