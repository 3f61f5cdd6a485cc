"""The gradient reducer of DistributedDataParallel: buckets, readiness, overlap.

The parameters are packed into buckets of at most `bucket_cap_bytes` (the first one
smaller, so communication starts early), one flat array per bucket: in reverse
registration order at first, then, from the second synced step on, in the order the
first backward finished them (rank 0's order, as PyTorch rebuilds its buckets), so that
the buckets fill one after the other. During backward the engine calls
a post-accumulate-grad hook on each parameter as soon as its `.grad` is complete; the
hook copies grad / world_size into the parameter's slot of its bucket, and when a bucket
is full it starts a non-blocking all-reduce (SUM) of it while backward goes on. Buckets
start strictly in index order on every rank (MPI matches collectives by order), so a
bucket that fills early waits for the ones before it. When the last bucket has started,
the reducer waits for all of them and copies the averages back into the `.grad`s: when
`backward()` returns, every rank holds the same averaged gradients.

A rank that has joined (DistributedDataParallel.join: its inputs ran out) runs no
backward; `shadow_backward` takes part in the same all-reduces, bucket by bucket, with
zero gradients, and leaves its `.grad`s as they are.

A parameter that gets no gradient in a step never calls its hook; with
`find_unused_parameters=True` the reducer walks the graph of the forward outputs, marks
the parameters it cannot reach as ready at once (sending their current `.grad`, or
zeros), and all-reduces which parameters took part anywhere: a parameter used on no rank
keeps its `.grad` untouched (None stays None).
"""
from __future__ import annotations

import numpy as np

from minigrad.autograd.accumulate_grad import AccumulateGrad
from minigrad.autograd.function import gradient_edge
from minigrad.distributed import ReduceOp
from minigrad.tensor import Tensor

FIRST_BUCKET_BYTES = 1 << 20  # as PyTorch: a small first bucket starts sending early


class Bucket:
    """Some parameters of one dtype and device, and the flat array their gradients are
    reduced in."""

    def __init__(self, indices: list[int], params: list[Tensor]):
        self.indices = indices
        self.offsets = []
        total = 0
        for param in params:
            self.offsets.append(total)
            total += param.numel()
        self.flat = params[0].xp.zeros(total, dtype=params[0].array.dtype)
        self.pending = len(indices)
        self.work = None

    def slot(self, position: int, param: Tensor):
        """The view of `flat` that holds `param`'s gradient, in param's shape."""
        start = self.offsets[position]
        return self.flat[start:start + param.numel()].reshape(param.shape)


def assign_buckets(params: list[Tensor], order: list[int], cap_bytes: int) -> list[list[int]]:
    """Parameter indices, taken in `order`, grouped into buckets: one dtype and device per
    bucket, at most cap_bytes each (the first at most FIRST_BUCKET_BYTES), a parameter
    larger than the cap alone in its bucket."""
    buckets: list[list[int]] = []
    open_buckets: dict = {}  # (dtype, device) -> (indices, bytes)
    for index in order:
        param = params[index]
        key = (param.array.dtype, str(param.device))
        limit = FIRST_BUCKET_BYTES if not buckets else cap_bytes
        indices, size = open_buckets.get(key, ([], 0))
        if indices and size + param.array.nbytes > min(limit, cap_bytes):
            buckets.append(indices)
            indices, size = [], 0
        indices.append(index)
        open_buckets[key] = (indices, size + param.array.nbytes)
    buckets += [indices for indices, _ in open_buckets.values() if indices]
    return buckets


class Reducer:
    """Averages the gradients of `params` over the process group during backward."""

    def __init__(self, names: list[str], params: list[Tensor], group, cap_bytes: int,
                 find_unused_parameters: bool):
        self.names, self.params, self.group = names, params, group
        self.divisor = group.size  # gradients are averaged over this many ranks
        self.find_unused_parameters = find_unused_parameters
        self.cap_bytes = cap_bytes
        self._build_buckets(list(reversed(range(len(params)))))
        # the order the first synced backward finishes the parameters in (None once the
        # buckets were rebuilt in that order)
        self.ready_order: list[int] | None = []
        self.index_of = {id(param): index for index, param in enumerate(params)}
        self.expecting = False  # a synced forward ran; its backward is due
        self.shadowing = False  # the all-reduces under way are a joined rank's zeros
        self.ready = [False] * len(params)
        self.next_bucket = 0
        self.in_flight: list[Bucket] = []
        self.used_anywhere = None  # (flags array, work) with find_unused_parameters
        self.hooks = [param.register_post_accumulate_grad_hook(self._on_grad_ready)
                      for param in params]

    def _build_buckets(self, order: list[int]) -> None:
        self.buckets = [Bucket(indices, [self.params[i] for i in indices])
                        for indices in assign_buckets(self.params, order, self.cap_bytes)]
        self.location = {}  # parameter index -> (bucket, position in it)
        for bucket in self.buckets:
            for position, index in enumerate(bucket.indices):
                self.location[index] = (bucket, position)

    def _rebuild_buckets(self) -> None:
        """Bucket the parameters in the order the first backward finished them. Every
        rank takes rank 0's order: the buckets must be the same everywhere."""
        order = self.group.mpi.broadcast_object(self.ready_order, 0,
                                                "DistributedDataParallel bucket order")
        self._build_buckets(order)
        self.ready_order = None

    # ------------------------------------------------------------------ iteration
    def prepare_for_backward(self, outputs) -> None:
        """Called after a synced forward: expect one backward that reaches every
        parameter (or, with find_unused_parameters, the ones the outputs depend on)."""
        self._start_step()
        if not self.find_unused_parameters:
            return
        reached = reachable_leaves(outputs)
        self._share_used([id(p) in reached or p.grad is not None for p in self.params])
        for index, param in enumerate(self.params):
            if id(param) not in reached:
                self._copy_in(index)
                self._mark_ready(index)

    def shadow_backward(self) -> None:
        """Take part in the all-reduces of a backward that the other ranks run and this
        one, which has joined, does not: zeros for every gradient and every "used" flag,
        the buckets started in order, the results not written into .grad."""
        self._start_step()
        self.shadowing = True
        if self.find_unused_parameters:
            self._share_used([False] * len(self.params))
        for bucket in self.buckets:
            bucket.flat[...] = 0
            for index in bucket.indices:
                self._mark_ready(index)

    def _start_step(self) -> None:
        if self.ready_order is not None:
            if len(self.ready_order) == len(self.params):
                self._rebuild_buckets()
            else:
                self.ready_order = []
        self.expecting = True
        self.ready = [False] * len(self.params)
        self.next_bucket = 0
        for bucket in self.buckets:
            bucket.pending = len(bucket.indices)

    def _share_used(self, used: list[bool]) -> None:
        """Start the all-reduce that tells which parameters some rank used this step."""
        flags = np.array(used, dtype=np.int32)
        self.used_anywhere = (flags, self.group.mpi.all_reduce(
            flags, ReduceOp.MAX, "DistributedDataParallel used parameters"))

    def unfinished_error(self) -> RuntimeError | None:
        """The error for a forward that starts before the last synced backward finished
        its reduction (None when it did)."""
        if not self.expecting:
            return None
        missing = [self.names[i] for i, done in enumerate(self.ready) if not done]
        return RuntimeError(
            f"DistributedDataParallel: rank {self.group.rank} expected the backward of the "
            "previous forward to give every parameter a gradient before a new forward, but "
            f"these got none: {', '.join(missing)}. If the model has parameters that a step "
            "does not use, pass find_unused_parameters=True; every synced forward must be "
            "followed by one backward of its outputs (or run the forward under no_grad)")

    # ------------------------------------------------------------------ readiness
    def _on_grad_ready(self, param: Tensor) -> None:
        if not self.expecting:  # under no_sync(), or a backward DDP did not prepare
            return
        index = self.index_of[id(param)]
        if self.ready[index]:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {self.names[index]!r} got its gradient "
                "twice in one step (a second backward through the same forward outputs); "
                "run one backward per forward, or the extra ones under no_sync()")
        self._copy_in(index)
        self._mark_ready(index)

    def _copy_in(self, index: int) -> None:
        """grad / divisor into the parameter's slot (zeros when it has no grad)."""
        param = self.params[index]
        bucket, position = self.location[index]
        slot = bucket.slot(position, param)
        if param.grad is None:
            slot[...] = 0
        else:
            param.xp.divide(param.grad.array, self.divisor, out=slot)

    def _mark_ready(self, index: int) -> None:
        self.ready[index] = True
        if self.ready_order is not None:
            self.ready_order.append(index)
        bucket, _ = self.location[index]
        bucket.pending -= 1
        if bucket.pending == 0 and bucket is self.buckets[self.next_bucket]:
            self._start_ready_buckets()
        elif self.in_flight:
            # MPI moves a non-blocking collective on only inside MPI calls: testing the
            # oldest one now and then lets it progress while backward runs
            if self.in_flight[0].work.is_completed():
                self.in_flight.pop(0)

    def _start_ready_buckets(self) -> None:
        while self.next_bucket < len(self.buckets):
            bucket = self.buckets[self.next_bucket]
            if bucket.pending:
                return
            backend = self.group.backend_for(bucket.flat)
            bucket.work = backend.all_reduce(bucket.flat, ReduceOp.SUM,
                                             "DistributedDataParallel gradient all_reduce")
            self.in_flight.append(bucket)
            self.next_bucket += 1
        self._finish()

    def _finish(self) -> None:
        """Every bucket has started: wait for them and write the averages into .grad."""
        used_anywhere = None
        if self.used_anywhere is not None:
            flags, work = self.used_anywhere
            work.wait()
            used_anywhere = flags
            self.used_anywhere = None
        for bucket in self.buckets:
            bucket.work.wait()
            bucket.work = None
            if self.shadowing:
                continue
            for position, index in enumerate(bucket.indices):
                param = self.params[index]
                if param.grad is not None:
                    param.grad.array[...] = bucket.slot(position, param)
                elif used_anywhere is not None and used_anywhere[index]:
                    param.grad = Tensor(bucket.slot(position, param))
        self.in_flight = []
        self.expecting = False
        self.shadowing = False


def reachable_leaves(outputs) -> set[int]:
    """ids of the leaf tensors requiring grad that the graph of `outputs` (a tensor or
    nested lists, tuples and dicts of them) depends on: the variables of the AccumulateGrad
    nodes it reaches."""
    reached = set()
    stack = []
    for t in tensors_in(outputs):
        if t.requires_grad:
            stack.append(gradient_edge(t)[0])
    seen = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            reached.add(id(node.variable))
        stack += [next_node for next_node, _ in node.next_functions]
    return reached


def tensors_in(value) -> list[Tensor]:
    """The tensors in a tensor or in nested lists, tuples and dicts of them."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors_in(item)]
    return []
