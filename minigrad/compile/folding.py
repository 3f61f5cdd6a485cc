"""Constant folding: the steps whose results are the same at every replay run once, when
the plan is built, and the replay uses what they made.

A plan is made for one set of shapes, so a step that reads no array's values makes the
same array at every replay, and so does a step that reads only such arrays:
- `np.ones_like(loss)`, the gradient a backward starts from (ones_like, zeros_like and
  full_like read their argument's shape and dtype, not its values);
- `np.arange(16)`, `np.asarray(0.5, dtype=float32)`: calls given no array, only numbers,
  strings, dtypes and tuples of them (a list or another object is passed to the call
  as it is at each replay, and may have changed: such a call is left alone);
- minigrad's ops computing from such results alone (the seed broadcast to the shape of
  a sum's input, `Expand.forward`).
Each becomes a Folded step, whose line in the replay only names the array made here
(and is left out where only other folded steps read it).

That array is shared by every replay, so a step is folded only where nothing else can
change or keep it: no step writes into its memory (`out=`, `x[i] = v`, `np.add.at`), no
Python code receives it (an opaque call, a `.grad =`, the forward of an autograd
Function of the user's) and it is not read after the plan (an output, what a backward
keeps). And only where the array made here is like the one the capture recorded, a
NumPy array of the same shape, dtype and layout (ArrayInfo): anything else runs at
each replay as recorded. Fusion comes first, so that the numbers its kernels take in
(`np.asarray(2.0, dtype=float32)`) are written into their source, not folded.
"""
from __future__ import annotations

import numpy as np

from minigrad.compile.array_info import ArrayInfo
from minigrad.compile.schedule import handed_to_python, step_reads
from minigrad.compile.steps import Call, Folded, Ref, Unit
from minigrad.compile.values import PLAIN

# the functions whose result depends on their first argument's shape and dtype only
SHAPE_ONLY = (np.ones_like, np.zeros_like, np.full_like)
_IMMUTABLE = (*PLAIN, type, slice, np.dtype, np.generic)


def fold_constants(steps: list, arrays: dict, slot_roots: dict, protected: set) -> list:
    """The steps, each one whose result is the same at every replay replaced by a Folded
    step (module docstring). `arrays`: each slot's ArrayInfo; `slot_roots`: the memory
    each slot's array views; `protected`: the slots read after the plan."""
    shared = _shared_memory(steps, slot_roots, protected)
    values: dict[int, np.ndarray] = {}  # slot -> the array folded into it
    folded = []
    for step in steps:
        value = None
        if _foldable(step, values) and slot_roots.get(_out(step), None) not in shared:
            value = _computed(step, values, arrays)
        if value is None:
            folded.append(step)
        else:
            values[_out(step)] = value
            folded.append(Folded(_out(step), value, step))
    read = {slot for step in folded for slot in step_reads(step)}
    return [step for step in folded if not (isinstance(step, Folded) and step.out not in read)]


def _shared_memory(steps: list, slot_roots: dict, protected: set) -> set:
    """The memory numbers no folded array may be: memory a step writes into, that Python
    code may keep, that a user's Function reads, or that is read after the plan."""
    shared = handed_to_python(steps, slot_roots) | {slot_roots.get(s) for s in protected}
    shared.add(None)  # (a slot of no known memory)
    for step in steps:
        if isinstance(step, Call):
            shared.update(slot_roots.get(s) for s in step.writes)
        elif isinstance(step, Unit) and not _minigrad_op(step):
            shared.update(slot_roots.get(s) for s in step.reads)
    return shared


def _foldable(step, values: dict) -> bool:
    """Whether the step computes, without effects, from folded slots and immutable
    values alone (its first argument's shape, for SHAPE_ONLY)."""
    if type(step) is Call:  # not a Fused group
        if step.effect is not None or step.writes or not isinstance(step.out, Ref):
            return False
        args = step.args[1:] if _shape_only(step) else step.args
        return _known(args, values) and _known(step.kwargs, values)
    if isinstance(step, Unit) and _minigrad_op(step):
        return (not step.saved and not step.attributes and _known(step.args, values)
                and _known(step.params, values))
    return False


def _computed(step, values: dict, arrays: dict) -> np.ndarray | None:
    """The step's result computed now, or None where it cannot be or differs from what
    the capture recorded."""
    recorded = arrays.get(_out(step))
    if recorded is None or recorded.array_type is not np.ndarray:
        return None
    if isinstance(step, Call) and _shape_only(step):
        stand_in = _stand_in(arrays.get(step.args[0].slot))
        if stand_in is None:
            return None
        values = {**values, step.args[0].slot: stand_in}
    try:
        if isinstance(step, Unit):
            result = step.forward(step.cls(), *_filled(step.args, values),
                                  **_filled(step.params, values))
        else:
            result = step.fn(*_filled(step.args, values), **_filled(step.kwargs, values))
    except Exception:  # noqa: BLE001  (then the replay makes it, as the capture did)
        return None
    if isinstance(result, np.generic):
        result = np.asarray(result)  # a 0-d array, as the replay makes it
    if type(result) is not np.ndarray or ArrayInfo.of(result, False) != recorded:
        return None
    return result


def _stand_in(info: ArrayInfo | None) -> np.ndarray | None:
    """An array of a recorded array's shape, dtype and layout (C or Fortran order)."""
    if info is None or info.array_type is not np.ndarray:
        return None
    if info.c_contiguous or info.f_contiguous:
        return np.empty(info.shape, info.dtype, order="C" if info.c_contiguous else "F")
    return None


def _known(template, values: dict) -> bool:
    """Whether a template holds only folded slots and immutable values."""
    if isinstance(template, Ref):
        return template.slot in values
    if type(template) is tuple:
        return all(_known(t, values) for t in template)
    if type(template) is dict:
        return all(_known(t, values) for t in template.values())
    return isinstance(template, _IMMUTABLE)


def _filled(template, values: dict):
    """A template with each slot's folded array in its place."""
    if isinstance(template, Ref):
        return values[template.slot]
    if type(template) is tuple:
        return tuple(_filled(t, values) for t in template)
    if type(template) is dict:
        return {k: _filled(v, values) for k, v in template.items()}
    return template


def _shape_only(step: Call) -> bool:
    return (any(step.fn is f for f in SHAPE_ONLY) and bool(step.args)
            and isinstance(step.args[0], Ref))


def _minigrad_op(step: Unit) -> bool:
    """Whether a Unit is the forward of one of minigrad's ops (pure, by their contract),
    not of an autograd Function the user wrote."""
    return step.cls.__module__.startswith("minigrad.")


def _out(step) -> int:
    return step.out.slot if isinstance(step, Call) else step.out
