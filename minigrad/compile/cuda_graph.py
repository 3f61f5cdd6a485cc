"""CUDA graphs: a GPU plan captured once into a graph, then launched as one call.

With mode="reduce-overhead" (and "max-autotune", as in PyTorch) a plan on the GPU runs
through CuPy's graph API instead of issuing its kernels one by one from Python:

    capture (once):  every array the plan reads from outside gets a buffer of its own;
                     the replay function runs on those buffers on a capture stream in
                     `begin_capture()` ... `end_capture()`, which records the kernels
                     instead of running them, into a private memory pool
    each call:       copy the call's arrays into the buffers, `graph.launch()`, copy
                     the results the caller keeps out of the graph's memory

A graph bakes in every address and every kernel argument, so a plan goes into one only
when nothing in it is decided on the host at replay time. The values it reads into
Python (guards: an index's range, say) are read before each launch, by the guards and
the steps they depend on, run on the call's arrays; a failed check stops the call before
the graph runs. It stays a stream replay (its steps issued one by one, as without
graphs) when it draws random numbers (a graph would redraw the captured numbers), calls Python
(an optimizer step, a `.grad = ...`), writes into an array it is handed (the write would
land in the graph's copy), or hands back two results sharing memory. The reason is
printed under MINIGRAD_DEBUG=compile. A capture that fails (an operation CUDA does not
allow while a stream captures) is tried once more at the next call, since the stream
replay of the failed call loads the kernels and sets up the libraries a first capture
may have met unready; a second failure leaves the plan a stream replay.

Parameters and buffers (tensors the step reaches, not its arguments) are read in place:
the graph reads their memory, so an optimizer updating them in place is seen at the next
launch without a copy. When one of them is another array at a later call (`p.data = ...`),
the graph is captured again, up to MAX_CAPTURES times, then the plan stays a stream
replay.

The graph's memory (the buffers, every intermediate, the pool they come from) lives as
long as the plan: on the GPU a freed block the graph still writes into must never be
handed to another array, so the private pool is never shared. The results are copied
out, so that a result kept from one call is not overwritten by the next.
"""
from __future__ import annotations

import dataclasses
import sys

from minigrad.backend.device import cupy_or_none
from minigrad.compile.codegen import ReplayFunction
from minigrad.compile.plan import prints_plans
from minigrad.compile.schedule import last_uses, step_outputs, step_reads
from minigrad.compile.steps import Call, Guard, Opaque, SetGrad

GRAPH_MODES = ("reduce-overhead", "max-autotune")
MAX_CAPTURES = 3  # captures of one plan's graph before it stays a stream replay


def use_cuda_graphs(entry, name: str) -> None:
    """Give a GPU Entry's plans (forward, and the backward of each output that needs
    gradients) graphs."""
    if not entry.plan.on_gpu:
        return
    stable = frozenset(e.slot for e in entry.externals
                       if e.argument is None and e.attribute == "array")
    entry.plan.graph = GraphReplay(entry.plan, stable, name)
    for index, backward in enumerate(entry.backwards):
        backward.plan.graph = GraphReplay(backward.plan, stable,
                                          f"{name}, its backward"
                                          + (f" of output {index}" if index else ""))


class GraphReplay:
    """One plan's CUDA graph and the buffers it reads and writes (module docstring)."""

    def __init__(self, plan, stable_slots: frozenset, label: str):
        """`stable_slots`: the slots holding a parameter's or buffer's array, read in
        place; `label`: what MINIGRAD_DEBUG=compile calls the plan."""
        self.plan = plan
        self.stable_slots = stable_slots
        self.label = label
        self.reason = _steps_refusal(plan)  # None while the plan may go into a graph
        self.checks = self.replay = None
        if self.reason is None:
            try:
                self.checks, self.replay = _split(plan, cupy_or_none())
            except _Refused as refused:
                self.reason = str(refused)
        self.captures = 0
        self.failed_captures = 0
        self.launches = 0
        self.graph = None
        self._reported = None

    def run(self, slots: list) -> bool:
        """Run the plan on `slots` as one graph launch; False, having run nothing, where
        the plan stays a stream replay."""
        if self.reason is None and (self.graph is None or not self.graph.fits(slots)):
            self._capture(slots)
        if self.graph is None:
            if self.reason is not None:
                self._report(f"stream replay: {self.reason}")
            return False
        self.graph.launch(slots)
        self.launches += 1
        return True

    def _capture(self, slots: list) -> None:
        self.graph = None
        if self.captures == MAX_CAPTURES:
            self.reason = (f"the arrays of its parameters changed between calls "
                           f"{MAX_CAPTURES} times")
            return
        self.captures += 1
        try:
            self.graph = _CapturedGraph(self, slots)
        except _CaptureFailed as failed:
            # the first time, a kernel may have been loaded or a library set up during
            # the capture: the stream replay of this call does both, so try once more
            self.failed_captures += 1
            if self.failed_captures == 2:
                self.reason = str(failed)
            return
        except _Refused as refused:
            self.reason = str(refused)
            return
        self._report(f"CUDA graph captured ({len(self.graph.inputs)} arrays copied in, "
                     f"{len(self.graph.copied_out)} copied out per launch)")

    def _report(self, text: str) -> None:
        """Print `text` under MINIGRAD_DEBUG=compile, once until it changes."""
        if text != self._reported and prints_plans():
            print(f"[minigrad compile] {self.label}: {text}", file=sys.stderr)
        self._reported = text


class _Refused(Exception):
    """The plan cannot go into a graph; the message says why."""


class _CaptureFailed(_Refused):
    """An operation of the plan failed while the stream was capturing."""


class _CapturedGraph:
    """The graph of one capture: its buffers and what a launch copies in and out."""

    def __init__(self, owner: GraphReplay, slots: list):
        cupy = cupy_or_none()
        plan, stable_slots = owner.plan, owner.stable_slots
        self.checks, replay = owner.checks, owner.replay
        self.replay = replay
        for slot in replay.loaded:
            if not isinstance(slots[slot], cupy.ndarray):
                raise _Refused(f"slot s{slot} holds a {type(slots[slot]).__name__}, "
                               "not a GPU array")
        self.pinned = {slot: slots[slot] for slot in replay.loaded if slot in stable_slots}
        staged = [slot for slot in replay.loaded if slot not in stable_slots]
        _refuse_writes_into(plan, staged)
        self.pool = cupy.cuda.MemoryPool()  # never shared: see the module docstring
        stream = cupy.cuda.Stream(non_blocking=True)
        buffers = list(slots)
        with cupy.cuda.using_allocator(self.pool.malloc):
            # (a view with gaps gets a dense buffer: the first launch, checked against
            # the eager run, shows that the kernels give the same bits on it)
            self.inputs = {slot: cupy.empty_like(slots[slot]) for slot in staged}
            self.layouts = {slot: slots[slot].strides for slot in staged}
            for slot, buffer in self.inputs.items():
                buffers[slot] = buffer
            with stream:
                stream.begin_capture()
                try:
                    replay.function(buffers)
                except Exception as failure:  # noqa: BLE001  (e.g. a host read in a kernel)
                    _end_quietly(stream)
                    raise _CaptureFailed(f"the capture failed: {failure!r}") from None
                self.graph = stream.end_capture()
        self.results = {slot: buffers[slot] for slot in replay.stored}
        self.copied_out = _results_to_copy(self.results, self.pinned, self.inputs)

    def fits(self, slots: list) -> bool:
        """Whether a launch can run this call: its parameters are the captured arrays
        and its other arrays have the buffers' layouts."""
        for slot, array in self.pinned.items():
            if slots[slot] is not array:
                return False
        for slot, buffer in self.inputs.items():
            array = slots[slot]
            if (array.shape != buffer.shape or array.dtype != buffer.dtype
                    or array.strides != self.layouts[slot]):
                return False
        return True

    def launch(self, slots: list) -> None:
        """The replay function's effect on `slots`, by one graph launch, after the
        plan's checks (GuardFailed where one fails)."""
        if self.checks is not None:
            self.checks.function(list(slots))  # a copy: the checks drop what they read
        for slot, buffer in self.inputs.items():
            buffer[...] = slots[slot]
        self.graph.launch()
        for slot in self.replay.dropped_loaded:
            slots[slot] = None
        for slot, result in self.results.items():
            slots[slot] = result.copy(order="K") if slot in self.copied_out else result


def _split(plan, cupy):
    """(checks, graph): the replay function of the plan's guards with the steps they
    read from (None without guards), run before each launch on the call's own arrays,
    and the replay function the graph is captured from: the plan without its guards,
    each copy from the host in it made once (`_made_once`)."""
    guards = [step for step in plan.steps if isinstance(step, Guard)]
    checks = None
    if guards:
        cone = _guard_cone(plan.steps)
        checks = ReplayFunction(cone, last_uses(cone, None, ()), None)
    from_host = (cupy.asarray, cupy.array, cupy.asanyarray)
    steps = [dataclasses.replace(step, fn=_made_once(step.fn, cupy))
             if isinstance(step, Call) and step.fn in from_host else step
             for step in plan.steps if not isinstance(step, Guard)]
    if not guards and all(new is old for new, old in zip(steps, plan.steps, strict=True)):
        return checks, plan.replay
    return checks, ReplayFunction(steps, last_uses(steps, plan.output, plan.keep),
                                  plan.output)


def _guard_cone(steps: list) -> list:
    """The guards and every step they depend on, in the plan's order. A graph reads no
    value into Python, so these run before its launch: a failed check then stops the
    call before the graph changed anything."""
    needed, cone = set(), []
    for step in reversed(steps):
        if isinstance(step, Guard) or needed.intersection(step_outputs(step)):
            if getattr(step, "writes", ()):
                raise _Refused(f"a value it reads into Python depends on {step.label}, "
                               "which writes into an array")
            cone.append(step)
            needed.update(step_reads(step))
    return cone[::-1]


def _made_once(copy_from_host, cupy):
    """`copy_from_host` run on a stream that is not capturing; its result, kept alive
    as long as the graph, is copied on the capturing stream (module docstring)."""
    side = cupy.cuda.Stream(non_blocking=True)
    kept = []

    def copied(*args, **kwargs):
        with side:
            array = copy_from_host(*args, **kwargs)
        side.synchronize()
        kept.append(array)
        return array.copy()

    return copied


def _steps_refusal(plan) -> str | None:
    """Why the plan's steps cannot go into a graph; None when they can."""
    for step in plan.steps:
        if isinstance(step, (Opaque, SetGrad)):
            return "it calls Python (an optimizer step or a .grad = ...)"
        if step.effect == "random":
            return f"it draws random numbers ({step.label})"
    return None


def _refuse_writes_into(plan, staged: list) -> None:
    """A write into the memory of an array the call hands in would land in the graph's
    copy of it, not in the caller's array."""
    roots = plan.slot_roots
    handed_in = {roots.get(slot) for slot in staged} - {None}
    for step in plan.steps:
        for slot in getattr(step, "writes", ()):
            if roots.get(slot) in handed_in:
                raise _Refused(f"{step.label} writes into an array the call hands in")


def _results_to_copy(results: dict, pinned: dict, inputs: dict) -> set:
    """The result slots whose arrays a launch copies out: all but views of a parameter's
    memory. A view of an array the call hands in, or two results sharing the graph's
    memory, would stop sharing it once copied: refused."""
    pinned_owners = {id(_owner(array)) for array in pinned.values()}
    input_owners = {id(_owner(array)) for array in inputs.values()}
    owners: dict[int, int] = {}
    copied = set()
    for slot, result in results.items():
        owner = id(_owner(result))
        if owner in pinned_owners:
            continue
        if owner in input_owners:
            raise _Refused(f"result s{slot} is a view of an array the call hands in")
        if owner in owners:
            raise _Refused(f"results s{owners[owner]} and s{slot} share memory")
        owners[owner] = slot
        copied.add(slot)
    return copied


def _owner(array):
    return array if array.base is None else array.base


def _end_quietly(stream) -> None:
    """End a capture that failed part way (CUDA may say it was invalidated)."""
    try:
        stream.end_capture()
    except Exception:  # noqa: BLE001, S110  (the capture is being abandoned anyway)
        pass
