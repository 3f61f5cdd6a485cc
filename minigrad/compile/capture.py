"""One capture: run the step once, eagerly, with every array operation recorded; put
back everything that run changed; make the record a plan (an Entry).

The eager run works on TracedArrays (traced.py) while the wrappers of patches.py listen.
When outputs of the step need gradients and the step does not run backward itself, the
capture also records the backward of each such output, by asking the engine for the
gradients of every tensor the step read that requires grad (`mg.autograd.grad`, with a
stand-in output gradient): the plan is then a forward and a backward per output, replayed
inside one node per output (replay.py).

The state is then rolled back (rollback.py) and the caller replays the plan, so that
even the first call returns the plan's numbers; `Expected` keeps what the eager run
produced, and `Expected.mismatch` compares the first replay with it, bit for bit.
"""
from __future__ import annotations

import threading

import numpy as np

from minigrad import random
from minigrad.autograd import engine, is_grad_enabled
from minigrad.compile.guards import Checks, argument_objects
from minigrad.compile.patches import Patches
from minigrad.compile.plan import Plan
from minigrad.compile.python_reads import MAX_LINKS, PythonReads
from minigrad.compile.recorder import Recorder
from minigrad.compile.replay import Backward, CompiledFunction, Entry
from minigrad.compile.results import Unreplayable, plain_result
from minigrad.compile.schedule import guards_into_forward
from minigrad.compile.snapshot import Snapshot
from minigrad.compile.steps import (
    Call,
    GraphBreak,
    Guard,
    Ref,
    SetGrad,
    TensorRef,
    Unit,
)
from minigrad.compile.traced import ACTIVE, plain
from minigrad.compile.traced_device import is_array, traced_view
from minigrad.nn.modules.module import Module
from minigrad.tensor import Tensor

# one capture at a time: the wrappers are process-wide (another thread runs eagerly)
_CAPTURING = threading.Lock()
_UNFINISHED = object()  # the output of a capture whose step raised or broke


class Broken:
    """A step that cannot be captured, and why (the op and the line of user code);
    `changes`: because it changed Python state, which a later call may not (a set-up
    done at the first call, a cache filled once)."""

    def __init__(self, reason: str, changes: bool = False):
        self.reason = reason
        self.changes = changes


def capture(fn, args: tuple, kwargs: dict, tensors: list[Tensor]):
    """An Entry and the Expected results of the eager run; a Broken; or None when
    another thread is capturing (run eagerly). Exceptions of the step propagate after
    the state is rolled back."""
    if not _CAPTURING.acquire(blocking=False):
        return None
    try:
        return _capture(fn, args, kwargs, tensors)
    finally:
        _CAPTURING.release()


def _capture(fn, args, kwargs, tensors):
    recorder, patches = Recorder(), Patches()
    reads = PythonReads()
    recorder.python_reads = reads.reads
    reason = backward = expected = result_shape = None
    output = _UNFINISHED  # a step may return None
    try:
        recorder.add_arguments(tensors)
        patches.install()
        ACTIVE.recorder = recorder
        recorder.argument_objects = argument_objects(args, kwargs)
        for module in _modules_held(recorder.argument_objects):
            recorder.bind_module(module)  # its parameters may be read without a call
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, Module):  # a module's forward, compiled in its place
            recorder.compiled_module = owner
            recorder.bind_module(owner)
        try:
            with reads:
                returned = fn(*args, **kwargs)
            result, result_shape = plain_result(returned)
        except Unreplayable as refused:
            recorder.refuse(f"it returns {refused}")
        if reads.overflow:
            recorder.refuse(f"it reads more than {MAX_LINKS} Python values (globals and "
                            "attributes), too many to check at every call")
        if recorder.backward_calls and recorder.cut_graphs:
            recorder.refuse("a backward through a graph made before the step (of a tensor "
                            "it reads)")
        if recorder.backward_calls == 0 and is_grad_enabled():
            with reads:  # (an autograd Function's backward is the user's code too)
                backward = _trace_backward(recorder, result)
        output = recorder.template(result, output=True)
    except GraphBreak as stop:
        reason = stop.reason
    finally:
        ACTIVE.recorder = None
        patches.remove()
        recorder.restore_graphs()
        for owner, array in reversed(recorder.swapped):
            owner.array = array
        if reason is None and output is not _UNFINISHED:
            expected = Expected(recorder, output, backward)
        versions = recorder.rollback.version_changes()
        changed = recorder.rollback.changed_modules()
        foreign_draws = recorder.rollback.foreign_draws()
        recorder.rollback.restore()
        reads.drop_settled()
        changed_read = _put_back_reads(recorder)
    if reason is None and foreign_draws is not None:
        reason = (f"the step draws from {foreign_draws}: a plan would keep the numbers "
                  "drawn once (draw with minigrad, mg.rand or an mg.Generator, or pass "
                  "the number as an argument)")
    if reason is None and changed:
        return Broken(f"the step changes {', '.join(changed)} (only tensor work is "
                      "replayed; keep Python state changes outside the compiled function)",
                      changes=True)
    if reason is None and changed_read is not None:
        return Broken(f"the step changes {changed_read}, a Python value it reads (only "
                      "tensor work is replayed; keep Python state changes outside the "
                      "compiled function)", changes=True)
    if reason is not None:
        return Broken(reason)
    try:
        entry = _entry(recorder, output, backward)
    except GraphBreak as stop:
        return Broken(stop.reason)
    entry.plan.version_changes = versions
    entry.result_shape = result_shape
    entry.prints = reads.prints
    return entry, expected


def _put_back_reads(recorder: Recorder) -> str | None:
    """Put back the values the step changed inside the function that read them
    (python_reads.py: what a function reads may be what the step wrote before calling
    it, not what it found); the first changed read's name, or None when it changed
    none."""
    changed = [read for read in recorder.python_reads if not read.holds()]
    for read in reversed(changed):
        if read.changed_inside:
            read.put_back()
    return changed[0].text if changed else None


def _entry(recorder: Recorder, output, backward: dict | None) -> Entry:
    arguments = [recorder.arguments[id_] for id_ in recorder.arguments]
    if backward is None:
        used = {s for step in recorder.steps for s in _reads_of(step)}
        used |= set(_slots(output))
        externals = [e for e in recorder.externals if e.slot in used]
        plan = Plan(recorder.steps, externals, recorder.slot_count, recorder.slot_roots,
                    output, arrays=recorder.recorded_arrays())
        return Entry(plan, externals, arguments, Checks(recorder, externals))
    checks = Checks(recorder, recorder.externals)
    traces = backward["traces"]
    forward_steps, backward_steps = recorder.steps[:traces[0]["start"]], []
    for trace in traces:
        forward_steps, steps = guards_into_forward(
            forward_steps, recorder.steps[trace["start"]:trace["end"]], trace["grad_slot"])
        backward_steps.append(steps)
    reads = [{s for step in steps for s in _reads_of(step)} for steps in backward_steps]
    backward_reads = set().union(*reads)
    arrays = recorder.recorded_arrays()
    forward = Plan(forward_steps, recorder.externals, recorder.slot_count,
                   recorder.slot_roots, output, keep=backward_reads, arrays=arrays)
    backwards, groups = [], len(forward.fused_groups())
    for trace, steps, read in zip(traces, backward_steps, reads, strict=True):
        grads_template = tuple(Ref(s) for s in trace["input_grads"] if s is not None)
        plan = Plan(steps, [], recorder.slot_count, recorder.slot_roots, grads_template,
                    arrays=arrays, first_group=groups + 1)
        groups += len(plan.fused_groups())
        backwards.append(Backward(plan, trace["output_slot"], trace["grad_slot"],
                                  trace["input_grads"],
                                  [i for i, e in enumerate(recorder.externals) if e.slot in read],
                                  [t["output_slot"] for t in traces if t["output_slot"] in read]))
    return Entry(forward, recorder.externals, arguments, checks, backwards)


def _modules_held(objects: list) -> list[Module]:
    """The modules among arguments, and in the attributes of arguments."""
    found = []
    for value in objects:
        held = [value] if isinstance(value, Module) else getattr(value, "__dict__", {}).values()
        found += [m for m in held if isinstance(m, Module)]
    return found


def _reads_of(step) -> tuple:
    if isinstance(step, (Guard, SetGrad)):
        return () if isinstance(step, SetGrad) and step.value is None else (
            step.slot if isinstance(step, Guard) else step.value.slot,)
    return step.reads


def _trace_backward(recorder: Recorder, result) -> dict | None:
    """Record the backward of each output that needs gradients (module docstring), one
    after the other; None when no output does."""
    outputs = list({id(t): t for t in _tensors(result) if t.grad_fn is not None}.values())
    if not outputs:
        return None
    if any(e.attribute == "grad" for e in recorder.externals):
        recorder.refuse("a forward that reads gradients")
    output_slots = [recorder.slot_of[id(t.array)] for t in outputs]
    if len(set(output_slots)) < len(outputs):
        recorder.refuse("outputs that need gradients and are one array")
    leaves = [e for e in recorder.externals if e.tensor._requires_grad]
    recorder.tracing_backward = True
    traces = []
    for index, (output, output_slot) in enumerate(zip(outputs, output_slots)):
        start = len(recorder.steps)
        recorder.depth += 1
        try:
            ones = output.xp.ones(output.array.shape, output.array.dtype)
        finally:
            recorder.depth -= 1
        stand_in = traced_view(ones)
        grad_slot = recorder._register(stand_in)
        grads = engine.grad([output], [e.tensor for e in leaves],
                            grad_outputs=[Tensor._wrap(stand_in)], allow_unused=True,
                            retain_graph=index < len(outputs) - 1)
        grad_of = {}
        for e, g in zip(leaves, grads, strict=True):
            if g is not None:
                grad_of[e.slot] = recorder.template(g.array).slot
        for step in recorder.steps[start:]:
            if step.effect is not None or not isinstance(step, (Call, Unit, Guard)):
                recorder.refuse(f"a backward that does more than compute gradients "
                                f"({type(step).__name__} {getattr(step, 'label', '')})")
        traces.append({"start": start, "end": len(recorder.steps), "grad_slot": grad_slot,
                       "output_slot": output_slot,
                       "input_grads": [grad_of.get(e.slot) for e in recorder.externals],
                       "grads": grads})  # alive until Expected has read them
    return {"traces": traces}


def _tensors(value) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if type(value) in (tuple, list):
        return [t for v in value for t in _tensors(v)]
    if type(value) is dict:
        return [t for v in value.values() for t in _tensors(v)]
    return []


class Expected:
    """What the eager run of a capture produced: its outputs, the final arrays of the
    tensors it reached, the gradients it left, the random state; and for a forward with
    a backward, the gradients for the stand-in output gradient."""

    def __init__(self, recorder: Recorder, output, backward: dict | None):
        # what each output the plan computes held (not an argument returned as it is)
        object_slots = {slot for _, slot in recorder.arguments.values()}
        self.outputs = {slot: Snapshot(plain(recorder.keep_of(slot))) for slot in _slots(output)
                        if slot not in object_slots}
        # (the memory of each external slot, what the eager run left in it)
        self.externals = [(e, plain(recorder.keep_of(e.slot)),
                           Snapshot(plain(recorder.keep_of(e.slot))))
                          for e in recorder.externals]
        self.grads = [(tensor, _grad_snapshot(tensor)) for tensor, _ in
                      recorder.grad_start.values()]
        self.random = random.get_rng_state()
        self.rollback = recorder.rollback
        # per output that needs gradients (its slot): its inputs' gradients
        self.input_grads = {}
        for trace in backward["traces"] if backward is not None else ():
            self.input_grads[trace["output_slot"]] = [
                None if s is None else Snapshot(plain(recorder.keep_of(s)))
                for s in trace["input_grads"]]

    def mismatch(self, entry: Entry, tensors: list[Tensor], outputs) -> str | None:
        """What the first replay made differently from the eager run; None if nothing."""
        for index, (slot, got) in enumerate(_computed(entry.plan.output, outputs)):
            if not self.outputs[slot].matches(got):
                return f"output {index}"
        for e, memory, want in self.externals:
            if not want.matches(memory):
                return f"the {e.attribute} of a tensor of shape {e.shape}"
        for tensor, want in self.grads:
            got = tensor.grad
            if (got is None) != (want is None) or (got is not None
                                                   and not want.matches(got.array)):
                return f"the .grad of a tensor of shape {tuple(tensor.shape)}"
        if random.get_rng_state() != self.random:
            return "the random number generator's state"
        for node in _nodes_of(outputs):
            backward = node.recorded
            slots = list(node.shared.slots)
            got = entry.input_grads(slots, np.ones_like(slots[backward.output_slot]), backward)
            for index, (g, want) in enumerate(zip(got, self.input_grads[backward.output_slot],
                                                  strict=True)):
                if (g is None) != (want is None) or (g is not None and not want.matches(g)):
                    return f"the gradient of input {index}"
        return None


def _nodes_of(outputs) -> list[CompiledFunction]:
    """The nodes of a replay's outputs that need gradients."""
    return [t.grad_fn for t in _tensors(outputs) if isinstance(t.grad_fn, CompiledFunction)]


def _slots(template) -> list[int]:
    if isinstance(template, (Ref, TensorRef)):
        return [template.slot]
    if type(template) in (tuple, list):
        return [s for t in template for s in _slots(t)]
    if type(template) is dict:
        return [s for t in template.values() for s in _slots(t)]
    return []


def _computed(template, outputs):
    """(slot, array) for each array of a replay's outputs that its plan computed."""
    if isinstance(template, TensorRef):
        yield template.slot, outputs.array
    elif isinstance(template, Ref):
        if is_array(outputs):  # else an argument's tensor, returned as it is
            yield template.slot, outputs
    elif type(template) in (tuple, list):
        for t, value in zip(template, outputs, strict=True):
            yield from _computed(t, value)
    elif type(template) is dict:
        for key, t in template.items():
            yield from _computed(t, outputs[key])


def _grad_snapshot(tensor: Tensor):
    grad = tensor.__dict__.get("grad")
    return None if grad is None else Snapshot(plain(grad.array))
