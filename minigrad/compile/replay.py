"""Replaying a capture: bind the slots, run the plan, hand back the outputs.

An Entry is one captured plan with what it needs at each call: where its external slots
come from (the call's arguments, or the tensors it reached, read afresh every time) and
the checks that say whether it fits the call (guards.py).

A forward whose output needs gradients is replayed inside one node of the eager graph,
`CompiledFunction`: its forward runs the recorded forward, its backward the recorded
backward, so `loss.backward()` and any optimizer work on a compiled model as they do on
the eager one. Its inputs are the tensors the forward read (arguments and parameters);
it keeps the arrays its backward reads, and nothing else, until backward has run.
"""
from __future__ import annotations

from minigrad.autograd import is_grad_enabled
from minigrad.autograd.engine import keeps_graph
from minigrad.autograd.function import Function
from minigrad.compile.codegen import as_array
from minigrad.compile.guards import Checks
from minigrad.compile.plan import Plan, build_outputs
from minigrad.compile.steps import External, GuardFailed
from minigrad.tensor import Tensor


class Backward:
    """The recorded backward of a forward: the slot of the output that needs gradients,
    the slot its incoming gradient goes to, and the slot of each input's gradient (None
    where it gets none), inputs in the order of Entry.externals."""

    def __init__(self, plan: Plan, output_slot: int, grad_slot: int, input_grads: list):
        self.plan = plan
        self.output_slot = output_slot
        self.grad_slot = grad_slot
        self.input_grads = input_grads


class Entry:
    def __init__(self, plan: Plan, externals: list[External], arguments: list[tuple],
                 checks: Checks, backward: Backward | None = None):
        self.plan = plan
        self.externals = externals
        self.arguments = arguments  # (position among the call's tensors, object slot)
        self.checks = checks
        self.backward = backward

    def share_blocks(self, blocks) -> None:
        """Let the plans take their buffers' memory from `blocks` (buffers.py), those of
        the compiled function, which runs one plan at a time."""
        self.plan.blocks = blocks
        if self.backward is not None:
            self.backward.plan.blocks = blocks

    def bind(self, tensors: list[Tensor], arrays: tuple | None = None) -> list:
        """A slot list with every external slot bound; from `arrays`, in the order of
        self.externals, when given (a CompiledFunction's forward gets them so)."""
        slots = [None] * self.plan.slot_count
        for position, slot in self.arguments:
            slots[slot] = tensors[position]
        if arrays is not None:
            for external, array in zip(self.externals, arrays, strict=True):
                slots[external.slot] = array
            return slots
        for e in self.externals:
            owner = tensors[e.argument] if e.argument is not None else e.tensor
            if e.attribute == "grad":
                owner = owner.grad
            slots[e.slot] = owner.array
        return slots

    def replay(self, tensors: list[Tensor]):
        """The call's result, from the plan (through a CompiledFunction node when an
        output needs gradients)."""
        if self.backward is not None and is_grad_enabled():
            inputs = [tensors[e.argument] if e.argument is not None else e.tensor
                      for e in self.externals]
            if any(t._requires_grad for t in inputs):
                holder: dict = {}
                output = CompiledFunction.apply(*inputs, entry=self, tensors=tensors,
                                                holder=holder)
                return build_outputs(self.plan.output, holder["slots"],
                                     {self.backward.output_slot: output})
        slots = self.bind(tensors)
        self.plan.run(slots)
        return self.plan.build_output(slots)

    def input_grads(self, slots: list, grad) -> list:
        """The input gradients (arrays or None) for the output gradient `grad`."""
        backward = self.backward
        slots[backward.grad_slot] = grad
        backward.plan.run(slots)
        return [None if slot is None else as_array(slots[slot])
                for slot in backward.input_grads]


class CompiledFunction(Function):
    """A compiled forward as one node (see the module docstring); it prints as
    CompiledBackward0."""

    def forward(self, *arrays, entry: Entry, tensors: list, holder: dict):
        slots = entry.bind(tensors, arrays)
        entry.plan.run(slots)
        self.entry, self.slots = entry, slots
        holder["slots"] = slots
        return slots[entry.backward.output_slot]

    def backward(self, grad):
        if is_grad_enabled():
            raise RuntimeError("mg.compile: the backward of a compiled forward is not "
                               "differentiable again (create_graph=True); run the model "
                               "uncompiled for higher derivatives")
        slots = self.slots
        if keeps_graph():  # a later backward reads them again
            slots = list(slots)
        else:  # the plan drops each array after its last use, as eager nodes go
            self.slots, self._released = None, True
        try:
            grads = self.entry.input_grads(slots, grad.array)
        except GuardFailed as failed:
            raise RuntimeError(f"mg.compile: the recorded backward does not fit this call: "
                               f"{failed}; run the model uncompiled for it") from failed
        return tuple(None if g is None or not needed else grad._wrap(g)
                     for g, needed in zip(grads, self.needs_input_grad, strict=True))
