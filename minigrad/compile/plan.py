"""Plan: a recorded step made ready to replay.

The recorded steps, in the order schedule.py gives them (guards before lasting effects),
become the lines of one generated Python function of the slot list (codegen.py); the
replay (replay.py) binds the external slots from their tensors and calls it. Runs of
elementwise steps become one generated kernel each (fusion.py); steps whose results are
the same at every replay run once, here (folding.py). Slots no later step reads
are dropped as soon as they are last used, as eager frees them; on the CPU, the results
of fused kernels and matrix products that no one reads after the plan are written into
memory kept from one replay to the next instead (buffers.py).

A guard that fails raises GuardFailed: the caller then runs the step eagerly, after
putting back the random generators the replay drew from (`random_sources`).
"""
from __future__ import annotations

import os

import numpy as np

from minigrad.compile.buffers import Blocks, plan_layout
from minigrad.compile.codegen import ReplayFunction
from minigrad.compile.folding import fold_constants
from minigrad.compile.fusion import fuse, fusion_enabled
from minigrad.compile.schedule import hoist_guards, last_uses, slots_in
from minigrad.compile.steps import (
    Call,
    External,
    Folded,
    Fused,
    Guard,
    Opaque,
    Ref,
    TensorRef,
    Unit,
)
from minigrad.generator import Generator
from minigrad.tensor import Tensor


def prints_plans() -> bool:
    """Whether MINIGRAD_DEBUG asks for plans to be printed ("compile", read each time)."""
    return "compile" in os.environ.get("MINIGRAD_DEBUG", "").split(",")


class Plan:
    """The steps of one capture, compiled (see the module docstring)."""

    def __init__(self, steps: list, externals: list[External], slot_count: int,
                 slot_roots: dict, output, keep: set = frozenset(), *, arrays: dict,
                 first_group: int = 1):
        """`arrays`: what each slot's array was during the capture (ArrayInfo: shapes,
        dtypes, layouts and devices, which fusion.py reads). `first_group`: the number of the plan's
        first fused group in printouts."""
        self.slot_roots = slot_roots
        self.on_gpu = any(a.on_device for a in arrays.values())
        self.steps = hoist_guards(steps, slot_roots, externals)
        self.fusion_failures: list[str] = []  # groups whose kernel failed to build
        protected = set(slots_in(output)) | set(keep)  # read after the plan
        if fusion_enabled():
            self.steps = fuse(self.steps, arrays, slot_roots, protected, first_group,
                              self.fusion_failures)
        self.steps = fold_constants(self.steps, arrays, slot_roots, protected)
        self.externals = externals
        self.slot_count = slot_count
        self.output = output
        self.keep = keep  # slots kept past the run (what a backward reads)
        self.frees = last_uses(self.steps, output, keep)  # per step, the slots dropped
        # the CPU arrays written into memory kept between replays (buffers.py); None on
        # the GPU and where no array has one
        self.layout = None if self.on_gpu else plan_layout(
            self.steps, arrays, slot_roots, protected) or None
        self.blocks = Blocks()  # replaced by its compiled function's, shared by its plans
        self.replay = ReplayFunction(self.steps, self.frees, output,
                                     self.layout.index() if self.layout else None)
        self.build_output = self.replay.output
        self.random_sources = _random_before_guards(self.steps)
        self.version_changes: list = []  # (tensor, growth) applied after a replay
        self.graph = None  # a GraphReplay (cuda_graph.py) when launched as a CUDA graph

    def run(self, slots: list) -> None:
        """Run every step on `slots` (external slots bound): as one CUDA graph launch
        where the plan has a graph, else step by step."""
        if self.graph is None or not self.graph.run(slots):
            self._run_steps(slots)
        for tensor, growth in self.version_changes:
            tensor._version[0] += growth

    def _run_steps(self, slots: list) -> None:
        """The replay function, on a block of memory for its buffers where it has any."""
        if not self.layout:
            self.replay.function(slots)
            return
        block = self.blocks.take(self.layout.size)
        try:
            self.replay.function(slots, block.views(self.layout))
        finally:
            self.blocks.give_back(block)

    def fused_groups(self) -> list[Fused]:
        """The steps that each run a generated kernel for a group of elementwise steps."""
        return [step for step in self.steps if isinstance(step, Fused)]

    def describe(self) -> str:
        """The plan as text: one line per external slot and per step, each fused group
        with its kernel, and the generated replay function."""
        lines = [f"plan: {len(self.externals)} external slots, {self.slot_count} slots, "
                 f"{len(self.steps)} steps"]
        for e in self.externals:
            lines.append(f"  s{e.slot} = external {e.attribute} of a tensor "
                         f"{e.shape} {np.dtype(e.dtype).name}")
        for index, step in enumerate(self.steps):
            lines.append(f"  {index:4d}  {_describe(step)}")
        lines.append(f"  return {_show(self.output)}")
        sources: dict[str, str] = {}  # a kernel's source -> the group that printed it
        if self.layout:
            lines.append(self.layout.describe())
        for step in self.steps:
            if isinstance(step, Fused):
                lines += _describe_group(step, sources)
        lines += [f"left unfused, its kernel failed to build: {failure}"
                  for failure in self.fusion_failures]
        lines.append("replay function (codegen.py):")
        lines += [f"    {line}" for line in self.replay.source.splitlines()]
        return "\n".join(lines)


def build_outputs(template, slots: list, replaced: dict | None = None):
    """The value a template of outputs stands for: a tensor around each TensorRef's
    array, or the tensor `replaced` gives for its slot; one tensor per slot, so that a
    tensor the step returned twice comes back as one object."""
    return _built(template, slots, dict(replaced or {}))


def _built(template, slots: list, tensors: dict):
    if isinstance(template, TensorRef):
        if template.slot not in tensors:
            tensors[template.slot] = Tensor._wrap(slots[template.slot])
        return tensors[template.slot]
    if isinstance(template, Ref):
        return slots[template.slot]
    kind = type(template)
    if kind in (tuple, list):
        return kind(_built(t, slots, tensors) for t in template)
    if kind is dict:
        return {k: _built(v, slots, tensors) for k, v in template.items()}
    return template


# ----------------------------------------------------------------------------- guards


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
    if isinstance(step, Folded):
        return f"{_describe(step.replaced)}   [folded: made once, at build]"
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
