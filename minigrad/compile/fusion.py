"""Fusion: runs of elementwise steps of a plan become one generated kernel, a Numba one on
the CPU and a CuPy ElementwiseKernel on the GPU (fusion_targets.py).

Between the matrix products and reductions of a step lie runs of elementwise ops (a bias
add and a ReLU, a dropout mask, the chain rule's products and sums). Replayed one NumPy
call each, every op reads and writes a whole array; fused, one loop reads the run's
inputs once and writes only the results something reads after the run.

How the steps are grouped, in the plan's order:
- an elementwise step (elementwise.py) whose result has the open group's shape joins it;
- any other step that reads nothing the open group computes, writes nothing and changes
  no Python state (a matrix product of other values, a random draw, an elementwise op of
  another shape, a constant `np.asarray(0.5, dtype=float32)`) runs before the group,
  which stays open; the steps that run before it are grouped among themselves by these
  same rules, so that an elementwise run of another shape among them is fused too;
- any other step closes the group; an elementwise one starts the next group.
A group of two ops or more becomes a `Fused` step (steps.py); a lone op stays a NumPy
(or CuPy) call, which is as fast. A GPU plan fuses only ops whose arrays are all on the
GPU. Constants are written into the kernel; `s = np.asarray(s)` is
dropped (a slot always holds an array).

A result is stored (an output of the kernel) when a step after the group reads it, the
plan returns it, or the backward of a compiled forward keeps it; the others live only in
the kernel's local variables. Results are C-ordered arrays of the dtype eager made, so
what follows sees the arrays eager saw; they are new at each replay, as eager's are
(`_runner`), or on the CPU written into memory kept between replays (buffers.py). The
capture's self-check replays the fused plan against the eager run: a kernel that
differs makes the call run eagerly, with a warning.

MINIGRAD_COMPILE_FUSION=0 (read at each capture) turns fusion off; without Numba there
is none.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from minigrad.compile.elementwise import Node, as_node, constant_of, is_identity
from minigrad.compile.fusion_targets import target_for
from minigrad.compile.schedule import step_reads
from minigrad.compile.steps import Call, Fused, Guard, Ref, Unit

MIN_OPS = 2  # a lone op gains nothing from a kernel of its own


def fusion_enabled() -> bool:
    """Whether captures fuse: MINIGRAD_COMPILE_FUSION is not 0."""
    setting = os.environ.get("MINIGRAD_COMPILE_FUSION", "1").strip().lower()
    return setting not in ("0", "off", "false", "no")


@dataclass
class _Group:
    shape: tuple
    nodes: list = field(default_factory=list)
    steps: list = field(default_factory=list)  # the recorded steps, as (index, step)

    def computes(self) -> set:
        return {node.out for node in self.nodes}


def fuse(steps: list, arrays: dict, slot_roots: dict, protected: set, first_number: int,
         failures: list) -> list:
    """The steps with each elementwise run of MIN_OPS ops or more replaced by a Fused
    step (module docstring). `arrays`: what each slot's array was (ArrayInfo);
    `slot_roots`: the memory each slot's array views; `protected`: slots that must be
    stored whoever reads them (the plan's outputs, what a backward keeps). A group whose
    kernel fails to build keeps its steps, and `failures` gets a line saying why."""
    target = target_for(arrays)
    if target is None:
        return steps
    readers: dict[int, set] = {}
    for index, step in enumerate(steps):
        if not is_identity(step):
            for slot in step_reads(step):
                readers.setdefault(slot, set()).add(index)
    context = _Context(arrays, target, readers, protected, _fresh_slots(slot_roots),
                       failures, first_number)
    run = _Run(context)
    for index, step in enumerate(steps):
        if not is_identity(step):
            run.add(index, step)
    return _without_unread_constants(run.finish(), protected)


@dataclass
class _Context:
    """What every run of one plan's fusion reads, and the number of its next kernel."""
    arrays: dict
    target: object
    readers: dict
    protected: set
    fresh: set
    failures: list
    number: int
    constants: dict = field(default_factory=dict)


class _Run:
    """Steps in their recorded order, fused into groups (module docstring). The steps that
    run before the open group make a run of their own (`before`), fused by the same rules,
    so that an elementwise run of another shape among them (the chain rule's products on
    attention scores, say, while the adjoint of a q/k/v split is open) is fused too."""

    def __init__(self, context: _Context):
        self.context = context
        self.steps: list = []
        self.group: _Group | None = None
        self.before: _Run | None = None

    def add(self, index: int, step) -> None:
        context = self.context
        constant = constant_of(step)
        if constant is not None:
            context.constants[step.out.slot] = constant
            self.steps.append(step)  # it reads nothing: before any open group
            return
        node = as_node(step, context.arrays)
        if node is not None and not (_stores_fresh(node, context.arrays, context.fresh)
                                     and _on_target(node, context.arrays, context.target)):
            node = None
        shape = None if node is None else context.arrays[node.out].shape
        if node is not None and (self.group is None or self.group.shape == shape):
            if self.group is None:
                self.group = _Group(shape)
            self.group.nodes.append(node)
            self.group.steps.append((index, step))
        elif self.group is not None and _can_run_before(step, self.group):
            if self.before is None:
                self.before = _Run(context)
            self.before.add(index, step)
        else:
            self._close()
            if node is not None:  # of another shape than the group it ends: a new one
                self.group = _Group(shape, [node], [(index, step)])
            else:
                self.steps.append(step)

    def finish(self) -> list:
        """The steps, every group closed."""
        self._close()
        return self.steps

    def _close(self) -> None:
        if self.before is not None:
            self.steps += self.before.finish()
            self.before = None
        if self.group is not None:
            context = self.context
            closed = _close(self.group, context.readers, context.protected,
                            context.constants, context.arrays, context.target,
                            context.number, context.failures)
            context.number += sum(isinstance(step, Fused) for step in closed)
            self.steps += closed
            self.group = None


def _close(group: _Group, readers: dict, protected: set, constants: dict, arrays: dict,
           target, number: int, failures: list) -> list:
    """The steps standing for a closed group: one Fused step, or its own steps."""
    ops = len(group.nodes)
    if ops < MIN_OPS:
        return [step for _, step in group.steps]
    indices = {index for index, _ in group.steps}
    computed = group.computes()
    inputs: list[int] = []
    for node in group.nodes:
        for operand in node.operands:
            if (isinstance(operand, int) and operand not in computed
                    and operand not in constants and operand not in inputs):
                inputs.append(operand)
    outputs = [node.out for node in group.nodes
               if node.out in protected or readers.get(node.out, set()) - indices]
    if not outputs:  # nothing reads the run: keep it as recorded (nothing to gain)
        return [step for _, step in group.steps]
    results = [(arrays[s].shape, arrays[s].dtype) for s in outputs]
    try:
        built = target.build(group.nodes, inputs, outputs, constants, arrays, group.shape)
        if built is None:  # an op the target has no exact kernel for
            return [step for _, step in group.steps]
        source, kernel = built
        # compile now, for arrays of the capture's types: a failure leaves the run unfused
        kernel(*(arrays[s].stand_in(target.empty) for s in (*inputs, *outputs)))
    except Exception as error:  # noqa: BLE001  (any failure to build it: run unfused)
        labels = ", ".join(node.label for node in group.nodes)
        failures.append(f"{target.name} kernel of {len(group.nodes)} ops ({labels}): "
                        f"{type(error).__name__}: {str(error).splitlines()[0][:200]}")
        return [step for _, step in group.steps]
    run = _runner(kernel, len(inputs), results, target.empty)
    out = Ref(outputs[0]) if len(outputs) == 1 else tuple(Ref(s) for s in outputs)
    hidden = tuple(node.out for node in group.nodes if node.out not in outputs)
    return [Fused(run, tuple(Ref(s) for s in inputs), {}, out, False, None,
                  f"fused{number}", tuple(inputs), (),
                  replaced=tuple(step for _, step in group.steps), hidden=hidden,
                  source=source, number=number,
                  kernel=kernel if target.name == "cpu" else None, results=tuple(results))]


def _runner(kernel, input_count: int, results: list, empty):
    """The function a Fused step calls: new result arrays (`empty`: NumPy's or CuPy's),
    as eager allocates its results, then the kernel. (A CPU plan's replay calls the
    kernel itself instead where its results have buffers: buffers.py.) Generated for the
    kernel's number of inputs and results, so that a call makes no loop and spreads no
    tuple:

        def run(in0, in1):
            out0 = empty(shape0, dtype0)
            out1 = empty(shape1, dtype1)
            kernel(in0, in1, out0, out1)
            return out0, out1
    """
    inputs = [f"in{index}" for index in range(input_count)]
    outputs = [f"out{index}" for index in range(len(results))]
    allocations = "".join(f"    out{index} = empty(shape{index}, dtype{index})\n"
                          for index in range(len(results)))
    source = (f"def run({', '.join(inputs)}):\n"
              f"{allocations}"
              f"    kernel({', '.join([*inputs, *outputs])})\n"
              f"    return {', '.join(outputs)}\n")
    namespace = {"empty": empty, "kernel": kernel}
    for index, (shape, dtype) in enumerate(results):
        namespace[f"shape{index}"], namespace[f"dtype{index}"] = shape, dtype
    exec(compile(source, "<minigrad fused runner>", "exec"), namespace)  # noqa: S102
    return namespace["run"]


def _fresh_slots(slot_roots: dict) -> set:
    """The slots whose array was the first to use its memory (not a view of an earlier
    slot's): only such results can come from a kernel's fresh array."""
    first: dict = {}
    for slot in sorted(slot_roots):
        first.setdefault(slot_roots[slot], slot)
    return set(first.values())


def _stores_fresh(node: Node, arrays: dict, fresh: set) -> bool:
    array = arrays[node.out]
    return (node.out in fresh and array.ndim >= 1 and array.c_contiguous
            and node.out not in node.operands)


def _on_target(node: Node, arrays: dict, target) -> bool:
    """The target fuses the node's op, and every array it reads or writes is on the
    target's device."""
    slots = [node.out, *(o for o in node.operands if isinstance(o, int))]
    return (node.op not in target.unfused_ops
            and all(target.holds(arrays[slot]) for slot in slots))


def _can_run_before(step, group: _Group) -> bool:
    """A step that may run before the open group's ops, which were recorded before it:
    it reads none of their results and has no effect they could see."""
    if isinstance(step, Guard) or not isinstance(step, (Call, Unit)):
        return False
    if step.effect not in (None, "random") or getattr(step, "writes", ()):
        return False
    computed = group.computes()
    return not any(slot in computed for slot in step_reads(step))


def _without_unread_constants(steps: list, protected: set) -> list:
    """The steps less the constants that only fused kernels read (written into them)."""
    read = {slot for step in steps for slot in step_reads(step)} | protected
    return [step for step in steps
            if not (constant_of(step) is not None and step.out.slot not in read)]
