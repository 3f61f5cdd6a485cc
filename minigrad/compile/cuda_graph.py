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
when nothing in it is decided on the host at replay time. It stays a stream replay
(its steps issued one by one, as without graphs) when it reads a value into Python (a
guard), draws random numbers (a graph would redraw the captured numbers), calls Python
(an optimizer step, a `.grad = ...`), writes into an array it is handed (the write would
land in the graph's copy), or hands back two results sharing memory. The reason is
printed under MINIGRAD_DEBUG=compile.

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
import os
import sys

from minigrad.backend.device import cupy_or_none
from minigrad.compile.codegen import ReplayFunction
from minigrad.compile.steps import Call, Guard, Opaque, SetGrad

GRAPH_MODES = ("reduce-overhead", "max-autotune")
MAX_CAPTURES = 3  # captures of one plan's graph before it stays a stream replay


def use_cuda_graphs(entry, name: str) -> None:
    """Give a GPU Entry's plans (forward, and backward where it has one) graphs."""
    if not entry.plan.on_gpu:
        return
    stable = frozenset(e.slot for e in entry.externals
                       if e.argument is None and e.attribute == "array")
    entry.plan.graph = GraphReplay(entry.plan, stable, name)
    if entry.backward is not None:
        entry.backward.plan.graph = GraphReplay(entry.backward.plan, stable,
                                                f"{name}, its backward")


class GraphReplay:
    """One plan's CUDA graph and the buffers it reads and writes (module docstring)."""

    def __init__(self, plan, stable_slots: frozenset, label: str):
        """`stable_slots`: the slots holding a parameter's or buffer's array, read in
        place; `label`: what MINIGRAD_DEBUG=compile calls the plan."""
        self.plan = plan
        self.stable_slots = stable_slots
        self.label = label
        self.reason = _steps_refusal(plan)  # None while the plan may go into a graph
        self.captures = 0
        self.launches = 0
        self.graph = None
        self._reported = None

    def run(self, slots: list) -> bool:
        """Run the plan on `slots` as one graph launch; False, having run nothing, where
        the plan stays a stream replay."""
        if self.reason is None and (self.graph is None or not self.graph.fits(slots)):
            self._capture(slots)
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
            self.graph = _CapturedGraph(self.plan, slots, self.stable_slots)
        except _Refused as refused:
            self.reason = str(refused)
            return
        self._report(f"CUDA graph captured ({len(self.graph.inputs)} arrays copied in, "
                     f"{len(self.graph.copied_out)} copied out per launch)")

    def _report(self, text: str) -> None:
        """Print `text` under MINIGRAD_DEBUG=compile, once until it changes."""
        if text != self._reported and "compile" in os.environ.get("MINIGRAD_DEBUG",
                                                                  "").split(","):
            print(f"[minigrad compile] {self.label}: {text}", file=sys.stderr)
        self._reported = text


class _Refused(Exception):
    """The plan cannot go into a graph; the message says why."""


class _CapturedGraph:
    """The graph of one capture: its buffers and what a launch copies in and out."""

    def __init__(self, plan, slots: list, stable_slots: frozenset):
        cupy = cupy_or_none()
        replay = _without_host_copies(plan, cupy)
        self.replay = replay
        for slot in replay.loaded:
            if not isinstance(slots[slot], cupy.ndarray):
                raise _Refused(f"slot s{slot} holds a {type(slots[slot]).__name__}, "
                               "not a GPU array")
        self.pinned = {slot: slots[slot] for slot in replay.loaded if slot in stable_slots}
        staged = [slot for slot in replay.loaded if slot not in stable_slots]
        _refuse_writes_into(plan, staged)
        for slot in staged:
            if not slots[slot].flags.c_contiguous:
                raise _Refused(f"slot s{slot} is not C-contiguous")
        self.pool = cupy.cuda.MemoryPool()  # never shared: see the module docstring
        stream = cupy.cuda.Stream(non_blocking=True)
        buffers = list(slots)
        with cupy.cuda.using_allocator(self.pool.malloc):
            self.inputs = {slot: cupy.empty_like(slots[slot]) for slot in staged}
            for slot, buffer in self.inputs.items():
                buffers[slot] = buffer
            with stream:
                stream.begin_capture()
                try:
                    replay.function(buffers)
                except Exception as failure:  # noqa: BLE001  (e.g. a host read in a kernel)
                    _end_quietly(stream)
                    raise _Refused(f"the capture failed: {failure!r}") from None
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
                    or not array.flags.c_contiguous):
                return False
        return True

    def launch(self, slots: list) -> None:
        """The replay function's effect on `slots`, by one graph launch."""
        for slot, buffer in self.inputs.items():
            buffer[...] = slots[slot]
        self.graph.launch()
        for slot in self.replay.dropped_loaded:
            slots[slot] = None
        for slot, result in self.results.items():
            slots[slot] = result.copy(order="K") if slot in self.copied_out else result


def _without_host_copies(plan, cupy):
    """The plan's replay function, or one in which each array made from host values
    (`cupy.asarray(0.5, dtype=...)`: a copy from the host, which a capturing stream
    refuses) is made once, now, and copied on the device at each launch."""
    from_host = (cupy.asarray, cupy.array, cupy.asanyarray)
    steps, replaced = [], False
    for step in plan.steps:
        if isinstance(step, Call) and not step.reads and step.fn in from_host:
            made = step.fn(*step.args, **step.kwargs)
            step = dataclasses.replace(step, fn=made.copy, args=(), kwargs={},
                                       label=f"{step.label} (made once)")
            replaced = True
        steps.append(step)
    if not replaced:
        return plan.replay
    return ReplayFunction(steps, plan.frees, plan.output)


def _steps_refusal(plan) -> str | None:
    """Why the plan's steps cannot go into a graph; None when they can."""
    for step in plan.steps:
        if isinstance(step, Guard):
            return f"it reads a value into Python ({step.label})"
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
