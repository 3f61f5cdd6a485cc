"""The collectives on tensors, with PyTorch's names and signatures: in place on the
tensor, for every dtype, on CPU tensors (MPI) and GPU tensors (NCCL, or MPI through the
host). Each checks first that every rank passes the same kind of tensor
(`agreement.check_agreement`), so a mismatch raises on every rank instead of reducing
garbage or hanging.

With `async_op=True` a collective returns a work object whose `wait()` completes it (the
tensor holds the result only then); otherwise it returns None when the result is there.
A collective that does not complete within the group's timeout raises a DistBackendError
(see timeouts.py).
"""
from __future__ import annotations

from datetime import timedelta

from minigrad.distributed.agreement import check_agreement
from minigrad.distributed.group import default_group
from minigrad.distributed.reduce_op import ReduceOp, reduction_problem
from minigrad.distributed.timeouts import as_timeout
from minigrad.tensor import Tensor


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, async_op: bool = False):
    """Replace `tensor` on every rank by the reduction (SUM, PRODUCT, MIN, MAX, AVG) of
    all ranks' tensors. Bool tensors: SUM and MAX are "any", PRODUCT and MIN "all"."""
    group = default_group("all_reduce")
    problem = _tensor_problem("tensor", tensor)
    if problem is None:
        problem = reduction_problem(op, tensor.array.dtype)
    check_agreement(group, "all_reduce", {**_describe(tensor), "op": _name(op)}, problem)
    work = group.backend_for(tensor.array).all_reduce(tensor.array, op)
    return _complete([tensor], work, async_op)


def broadcast(tensor: Tensor, src: int, async_op: bool = False):
    """Replace `tensor` on every rank by rank `src`'s."""
    group = default_group("broadcast")
    problem = _tensor_problem("tensor", tensor)
    if problem is None and not (isinstance(src, int) and 0 <= src < group.size):
        problem = ValueError(f"src={src!r} is not a rank of this group of {group.size}")
    check_agreement(group, "broadcast", {**_describe(tensor), "src": src}, problem)
    work = group.backend_for(tensor.array).broadcast(tensor.array, src)
    return _complete([tensor], work, async_op)


def all_gather(tensor_list: list, tensor: Tensor, async_op: bool = False):
    """Fill tensor_list[i] (world size tensors of tensor's shape, dtype and device) with
    rank i's `tensor`."""
    group = default_group("all_gather")
    problem = _tensor_problem("tensor", tensor) or _output_list_problem(
        tensor_list, tensor, group.size)
    check_agreement(group, "all_gather", _describe(tensor), problem)
    work = group.backend_for(tensor.array).all_gather([t.array for t in tensor_list],
                                                     tensor.array)
    return _complete(tensor_list, work, async_op)


def barrier(*, timeout: timedelta | None = None) -> None:
    """Return on every rank once all ranks have called barrier(); raise a DistBackendError
    naming the ranks that did not arrive if that takes longer than `timeout` (a
    datetime.timedelta; by default the group's)."""
    group = default_group("barrier")
    timeout = as_timeout(timeout, "barrier", group.timeout)
    # the check is an allgather: no rank leaves it before every rank has entered it
    check_agreement(group, "barrier", {}, timeout=timeout)


def all_gather_object(object_list: list, obj) -> None:
    """object_list[i] = rank i's `obj` (any picklable object; sent pickled)."""
    group = default_group("all_gather_object")
    problem = None
    if not isinstance(object_list, list) or len(object_list) != group.size:
        problem = ValueError(f"object_list must be a list of world size ({group.size}) "
                             f"entries, got {_length(object_list)}")
    check_agreement(group, "all_gather_object", {}, problem)
    object_list[:] = group.gather_objects(obj, "all_gather_object")


def broadcast_object_list(object_list: list, src: int = 0) -> None:
    """Replace the entries of `object_list` on every rank by rank `src`'s (pickled)."""
    group = default_group("broadcast_object_list")
    problem = None
    if not isinstance(object_list, list):
        problem = TypeError(f"object_list must be a list, got {type(object_list).__name__}")
    elif not (isinstance(src, int) and 0 <= src < group.size):
        problem = ValueError(f"src={src!r} is not a rank of this group of {group.size}")
    check_agreement(group, "broadcast_object_list",
                    {"src": src, "length": _length(object_list)}, problem)
    object_list[:] = group.mpi.broadcast_object(object_list, src, "broadcast_object_list")


def _complete(changed: list, work, async_op: bool):
    for tensor in changed:
        tensor._version[0] += 1  # changed in place: a graph that saved it must not reuse it
    if async_op:
        return work
    work.wait()
    return None


def _describe(tensor) -> dict:
    if not isinstance(tensor, Tensor):
        return {"tensor": type(tensor).__name__}
    return {"shape": tuple(tensor.shape), "dtype": str(tensor.array.dtype),
            "device": str(tensor.device)}


def _tensor_problem(name: str, tensor) -> Exception | None:
    if not isinstance(tensor, Tensor):
        return TypeError(f"{name} must be a minigrad Tensor, got {type(tensor).__name__}")
    return None


def _output_list_problem(tensor_list, tensor: Tensor, world_size: int) -> Exception | None:
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != world_size:
        return ValueError(f"tensor_list must hold world size ({world_size}) tensors, got "
                          f"{_length(tensor_list)}")
    for index, output in enumerate(tensor_list):
        if not isinstance(output, Tensor):
            return TypeError(f"tensor_list[{index}] is a {type(output).__name__}, not a Tensor")
        if (output.shape, output.array.dtype, output.device) != (
                tensor.shape, tensor.array.dtype, tensor.device):
            return ValueError(
                f"tensor_list[{index}] has shape {tuple(output.shape)} {output.dtype} on "
                f"{output.device}, but the input tensor has shape {tuple(tensor.shape)} "
                f"{tensor.dtype} on {tensor.device}")
    return None


def _length(value) -> str:
    return str(len(value)) if isinstance(value, (list, tuple)) else type(value).__name__


def _name(op) -> str:
    return op.name if isinstance(op, ReduceOp) else repr(op)
