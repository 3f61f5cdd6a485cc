"""Replaying a capture: bind the slots, run the plan, hand back the outputs.

An Entry is one captured plan with what it needs at each call: where its external slots
come from (the call's arguments, or the tensors it reached, read afresh every time) and
the checks that say whether it fits the call (guards.py).

A forward whose outputs need gradients is replayed inside nodes of the eager graph,
`CompiledFunction`, one per such output: the first runs the recorded forward, and each
node's backward runs the backward recorded for its output, so `loss.backward()` and any
optimizer work on a compiled model as they do on the eager one. Their inputs are the
tensors the forward read (arguments and parameters). They share the arrays their
backwards read, and nothing else, until one of them runs backward without keeping the
graph; that frees them all, as it frees the eager graph they stand for. (A model that
returns its logits and its loss: `loss.backward()` runs the loss's recorded backward,
which is eager's; gradients into both outputs reach the inputs through both nodes, so
they are summed there rather than where the two paths meet: the same sum, rounded in
another order.)
"""
from __future__ import annotations

import weakref

from minigrad.autograd import is_grad_enabled
from minigrad.autograd.engine import keeps_graph, will_execute
from minigrad.autograd.function import Function
from minigrad.autograd.saved_tensor import SavedTensor
from minigrad.compile.codegen import as_array
from minigrad.compile.guards import Checks
from minigrad.compile.plan import Plan, build_outputs
from minigrad.compile.steps import External, GuardFailed
from minigrad.tensor import Tensor


class Backward:
    """The recorded backward of one output of a forward: the output's slot, the slot its
    incoming gradient goes to, the slot of each input's gradient (None where it gets
    none), inputs in the order of Entry.externals, and the inputs and the outputs (their
    slots) whose arrays it reads."""

    def __init__(self, plan: Plan, output_slot: int, grad_slot: int, input_grads: list,
                 reads_inputs: list[int], reads_outputs: list[int]):
        self.plan = plan
        self.output_slot = output_slot
        self.grad_slot = grad_slot
        self.input_grads = input_grads
        self.reads_inputs = reads_inputs
        self.reads_outputs = reads_outputs


class Entry:
    def __init__(self, plan: Plan, externals: list[External], arguments: list[tuple],
                 checks: Checks, backwards: tuple[Backward, ...] = ()):
        self.plan = plan
        self.externals = externals
        self.arguments = arguments  # (position among the call's tensors, object slot)
        self.checks = checks
        self.backwards = backwards  # one per output that needs gradients
        self.result_shape = None  # namedtuples and dataclasses in the result (results.py)
        self.prints: list[str] = []  # where the step's code calls print() (python_reads.py)

    def share_blocks(self, blocks) -> None:
        """Let the plans take their buffers' memory from `blocks` (buffers.py), those of
        the compiled function, which runs one plan at a time."""
        self.plan.blocks = blocks
        for backward in self.backwards:
            backward.plan.blocks = blocks

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
        """The call's result, from the plan (through CompiledFunction nodes when outputs
        need gradients)."""
        if self.backwards and is_grad_enabled():
            inputs = [tensors[e.argument] if e.argument is not None else e.tensor
                      for e in self.externals]
            if any(t._requires_grad for t in inputs):
                shared = SharedSlots()
                made = {b.output_slot: CompiledFunction.apply(*inputs, entry=self,
                                                              tensors=tensors, shared=shared,
                                                              recorded=b)
                        for b in self.backwards}
                for b in self.backwards:
                    made[b.output_slot].grad_fn.watch([made[s] for s in b.reads_outputs])
                return build_outputs(self.plan.output, shared.slots, made)
        slots = self.bind(tensors)
        self.plan.run(slots)
        return self.plan.build_output(slots)

    def input_grads(self, slots: list, grad, backward: Backward) -> list:
        """The input gradients (arrays or None) for the gradient `grad` of the output
        whose recorded backward is `backward`."""
        slots[backward.grad_slot] = grad
        backward.plan.run(slots)
        return [None if slot is None else as_array(slots[slot])
                for slot in backward.input_grads]


class SharedSlots:
    """The slot list of one replayed forward, which the nodes of its outputs share (None
    before the forward ran, and once they are freed), and those nodes."""

    __slots__ = ("slots", "nodes")

    def __init__(self):
        self.slots = None
        self.nodes: list[weakref.ref] = []

    def read_later(self, node: CompiledFunction) -> bool:
        """Whether another node of these outputs is still to run in this backward."""
        return any(other is not None and other is not node and will_execute(other)
                   for other in (ref() for ref in self.nodes))


class CompiledFunction(Function):
    """The node of one output of a compiled forward (see the module docstring); it
    prints as CompiledBackward0."""

    _ran = False  # released by the engine after its backward (Function.release)

    def forward(self, *arrays, entry: Entry, tensors: list, shared: SharedSlots,
                recorded: Backward):
        if shared.slots is None:  # the first output's node runs the forward for all
            shared.slots = entry.bind(tensors, arrays)
            entry.plan.run(shared.slots)
        self.entry, self.shared, self.recorded = entry, shared, recorded
        shared.nodes.append(weakref.ref(self))
        # as eager nodes do, so that an in-place change of one before backward raises
        self.save_for_backward(*(arrays[i] for i in recorded.reads_inputs))
        return shared.slots[recorded.output_slot]

    def watch(self, outputs: list[Tensor]) -> None:
        """Check before backward, as eager nodes do, that none of these outputs (whose
        arrays the backward reads) was changed in place since."""
        self._saved += tuple(SavedTensor(t.array, (), t) for t in outputs)

    @property
    def _released(self) -> bool:
        shared = self.__dict__.get("shared")
        return self._ran or (shared is not None and shared.slots is None)

    @_released.setter
    def _released(self, released: bool) -> None:
        self._ran = released

    def backward(self, grad):
        if is_grad_enabled():
            raise RuntimeError("mg.compile: the backward of a compiled forward is not "
                               "differentiable again (create_graph=True); run the model "
                               "uncompiled for higher derivatives")
        self.saved  # noqa: B018  (raises if an input it reads changed in place since)
        shared = self.shared
        if keeps_graph() or shared.read_later(self):  # read again, by a later backward
            slots = list(shared.slots)  # or by another output's node in this one
        else:  # the plan drops each array after its last use, as eager nodes go
            slots, shared.slots = shared.slots, None
        try:
            grads = self.entry.input_grads(slots, grad.array, self.recorded)
        except GuardFailed as failed:
            raise RuntimeError(f"mg.compile: the recorded backward does not fit this call: "
                               f"{failed}; run the model uncompiled for it") from failed
        return tuple(None if g is None or not needed else grad._wrap(g)
                     for g, needed in zip(grads, self.needs_input_grad, strict=True))
