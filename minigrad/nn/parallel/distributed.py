"""DistributedDataParallel: the same model on every rank, each on its own share of the
batch, gradients averaged during backward (PyTorch's torch.nn.parallel name and
semantics; the reducer that does the averaging is in reducer.py)."""
from __future__ import annotations

import contextlib

from minigrad.autograd import is_grad_enabled
from minigrad.backend import require_cuda
from minigrad.distributed.algorithms.join import Join, Joinable
from minigrad.distributed.group import default_group
from minigrad.nn.modules.module import Module
from minigrad.nn.parallel.join_hook import DDPJoinHook, join_round
from minigrad.nn.parallel.reducer import Reducer, tensors_in
from minigrad.tensor import Tensor


class DistributedDataParallel(Module, Joinable):
    """Wrap `module` for data-parallel training: `DistributedDataParallel(model)` after
    `minigrad.distributed.init_process_group()`, on every rank.

    At construction every rank checks that the others wrap the same model (parameter
    and buffer names, shapes, dtypes) with the same settings, then rank 0's parameters and
    buffers are copied to all ranks. Each `backward()` of a forward's outputs averages
    the gradients over the ranks, overlapping communication with the rest of backward
    (see reducer.py); the optimizer then takes the same step everywhere.

    - `bucket_cap_mb`: the size of the gradient buckets (default 25 MiB).
    - `find_unused_parameters=True`: parameters that a step does not use get no gradient
      without hanging the job (costs a walk of the graph per step).
    - `broadcast_buffers=True`: rank 0's buffers are copied to all ranks before each
      forward that follows a synced one (as PyTorch: not after one under no_sync());
      turn it off for buffers that never change.
    - `no_sync()`: a context in which backward only accumulates local gradients; the next
      backward outside it averages the accumulated sums.
    - `join()`: a context for uneven inputs (ranks with different numbers of batches):
      ranks that run out shadow the others' all-reduces with zero gradients until all
      are done (see join_hook.py).
    - `device_ids`, `output_device`: accepted for PyTorch code; None, or for a module on
      the GPU that GPU (under the nccl backend, the one of this rank's local rank).
    """

    def __init__(self, module: Module, device_ids: list | None = None,
                 output_device=None, broadcast_buffers: bool = True,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False):
        super().__init__()
        Joinable.__init__(self)
        group = default_group("DistributedDataParallel")
        self.module = module
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel: the module has no parameter that "
                               "requires grad, so there is nothing to synchronize")
        devices = {str(p.device) for _, p in named}
        if len(devices) > 1:
            raise ValueError("DistributedDataParallel: the module's parameters are on "
                             f"several devices ({', '.join(sorted(devices))}); put it on one")
        _check_device_ids(device_ids, output_device, devices.pop())
        self.group = group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_cap_mb = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        self.require_backward_grad_sync = True
        # as PyTorch: buffers are sent before a forward that follows a synced one
        self.require_forward_param_sync = True
        self._divide_by_initial_world_size = True
        _check_same_everywhere(group, module, {
            "bucket_cap_mb": self.bucket_cap_mb, "broadcast_buffers": broadcast_buffers,
            "find_unused_parameters": find_unused_parameters})
        _broadcast_coalesced(group, [p for _, p in module.named_parameters()]
                             + list(module.buffers()))
        self.reducer = Reducer([name for name, _ in named], [p for _, p in named], group,
                               int(self.bucket_cap_mb * 2**20), find_unused_parameters)

    def forward(self, *inputs, **kwargs):
        error = self.reducer.unfinished_error()
        if error is not None:
            raise error
        sync = is_grad_enabled() and self.require_backward_grad_sync
        has_buffers = next(iter(self.module.buffers()), None) is not None
        sync_buffers = (self.broadcast_buffers and self.require_forward_param_sync
                        and self.group.size > 1 and has_buffers)
        buffer_source = 0
        self.reducer.divisor = self.group.size
        not_joined = Join.notify_join_context(self)
        if self._join_config.enable:
            buffer_source = join_round(self.group, True, sync, sync_buffers).buffer_source
            if not_joined is not None and not self._divide_by_initial_world_size:
                self.reducer.divisor = not_joined
        if sync_buffers:
            self._broadcast_buffers_from(buffer_source)
        outputs = self.module(*inputs, **kwargs)
        self.require_forward_param_sync = sync
        if is_grad_enabled() and self.require_backward_grad_sync and any(
                t.requires_grad for t in tensors_in(outputs)):
            self.reducer.prepare_for_backward(outputs)
        return outputs

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally without communicating (for
        gradient accumulation); the first backward after it averages the sums."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """A context for training with uneven inputs: wrap the training loop in `with
        model.join():` and a rank whose batches run out shadows the others' all-reduces
        with zero gradients until every rank is done; then every rank gets the model of
        the last rank to finish. Gradients are divided by the initial world size
        (`divide_by_initial_world_size=True`: every sample weighs the same) or by the
        number of ranks still training. `throw_on_early_termination=True`: every rank
        raises a RuntimeError as soon as one runs out, instead."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs) -> DDPJoinHook:
        """The hook Join runs on a rank that has joined (kwargs:
        divide_by_initial_world_size, default True)."""
        return DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_process_group(self):
        return self.group

    def _broadcast_buffers_from(self, source: int) -> None:
        """Rank `source`'s buffers to every rank."""
        _broadcast_coalesced(self.group, list(self.module.buffers()), source)

    def _broadcast_model_from(self, source: int) -> None:
        """Rank `source`'s parameters (and buffers, with broadcast_buffers) to every rank."""
        states = [p for _, p in self.module.named_parameters()]
        if self.broadcast_buffers:
            states += list(self.module.buffers())
        _broadcast_coalesced(self.group, states, source)

    def extra_repr(self) -> str:
        return (f"world_size={self.group.size}, bucket_cap_mb={self.bucket_cap_mb:g}, "
                f"find_unused_parameters={self.find_unused_parameters}")


def _check_device_ids(device_ids, output_device, device: str) -> None:
    """device_ids and output_device, accepted for PyTorch code, must name the one device
    this rank's module is on: None on the CPU, the current GPU (under the nccl backend,
    the GPU of the local rank) otherwise."""
    entries = list(device_ids or []) + ([] if output_device is None else [output_device])
    if not entries:
        return
    if device == "cpu":
        raise ValueError("DistributedDataParallel: device_ids and output_device must be None "
                         "for a module on the CPU")
    current = require_cuda().cuda.Device().id
    if len(device_ids or []) > 1 or any(_device_index(e, current) != current for e in entries):
        raise ValueError(
            f"DistributedDataParallel: device_ids={device_ids!r}, output_device="
            f"{output_device!r} do not name this rank's GPU ({current}); one GPU per rank")


def _device_index(entry, current: int) -> int | None:
    """3, 'cuda:3', 'gpu:3' -> 3; 'cuda', 'gpu' -> the current device; else None."""
    if isinstance(entry, int):
        return entry
    name, _, index = str(entry).partition(":")
    if name not in ("cuda", "gpu"):
        return None
    return int(index) if index.isdigit() else (current if not index else None)


def _model_summary(module: Module) -> list[tuple]:
    """What must match across ranks: every parameter and buffer's name, shape and dtype,
    and whether it is trained."""
    entries = [("parameter", name, tuple(p.shape), str(p.array.dtype), p.requires_grad)
               for name, p in module.named_parameters()]
    entries += [("buffer", name, tuple(b.shape), str(b.array.dtype), False)
                for name, b in module.named_buffers()]
    return entries


def _check_same_everywhere(group, module: Module, settings: dict) -> None:
    """Raise on every rank when some rank wraps another model or uses other settings,
    naming the first rank that differs from rank 0 and how."""
    everyone = group.gather_objects((_model_summary(module), settings,
                                     str(next(module.parameters()).device)),
                                    "DistributedDataParallel")
    reference_model, reference_settings, reference_device = everyone[0]
    for rank, (model, settings_here, device) in enumerate(everyone):
        difference = _first_difference(model, reference_model)
        for key, value in settings_here.items():
            if difference is None and value != reference_settings[key]:
                difference = f"{key}={value!r} there but {reference_settings[key]!r} on rank 0"
        if difference is None and device != reference_device:
            difference = f"the model is on {device} there but on {reference_device} on rank 0"
        if difference is not None:
            raise RuntimeError(f"DistributedDataParallel: rank {rank} differs from rank 0: "
                               f"{difference}; every rank must build the same model and "
                               "wrap it with the same settings")


def _first_difference(entries: list[tuple], reference: list[tuple]) -> str | None:
    for mine, theirs in zip(entries, reference):
        if mine != theirs:
            kind, name, shape, dtype, trained = mine
            return (f"{kind} {name!r} has shape {shape}, dtype {dtype}, requires_grad "
                    f"{trained} there, but rank 0 has {theirs[0]} {theirs[1]!r} with shape "
                    f"{theirs[2]}, dtype {theirs[3]}, requires_grad {theirs[4]}")
    if len(entries) != len(reference):
        longer = entries if len(entries) > len(reference) else reference
        extra = longer[min(len(entries), len(reference))]
        return (f"it has {len(entries)} parameters and buffers, rank 0 has {len(reference)} "
                f"(the first unmatched is {extra[0]} {extra[1]!r})")
    return None


def _broadcast_coalesced(group, tensors: list[Tensor], src: int = 0) -> None:
    """Copy rank src's values of `tensors` to every rank, one flat message per dtype and
    device instead of one per tensor."""
    if group.size == 1 or not tensors:
        return
    by_kind: dict = {}
    for tensor in tensors:
        by_kind.setdefault((tensor.array.dtype, str(tensor.device)), []).append(tensor)
    for same_kind in by_kind.values():
        xp = same_kind[0].xp
        flat = xp.concatenate([t.array.reshape(-1) for t in same_kind])
        group.backend_for(flat).broadcast(flat, src, "DistributedDataParallel broadcast").wait()
        offset = 0
        for tensor in same_kind:
            size = tensor.numel()
            tensor.array[...] = flat[offset:offset + size].reshape(tensor.shape)
            tensor._version[0] += 1
            offset += size
