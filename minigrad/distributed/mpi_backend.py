"""Collectives on arrays over MPI (mpi4py): the CPU backend, also used across machines.

Every collective is non-blocking underneath (MPI_Iallreduce, MPI_Ibcast,
MPI_Iallgather) and returns an `MPIWork`; a blocking call is the same call followed by
`wait()`. The values travel from a C-contiguous host array of the wire dtype: the
tensor's own array when it already is one (a contiguous NumPy array of float32, float64
or int64, for example), else a staged copy that `wait()` writes back. GPU arrays are
staged through the host (CUDA-aware MPI is not assumed). Python objects travel pickled,
their lengths first.

Each collective is numbered and posted on the group's ArrivalBoard as it starts, and
`wait()` raises a DistBackendError naming the ranks that did not arrive when it does not
complete before the group's timeout (or the call's).

MPICH and Open MPI move a non-blocking collective forward only while some MPI call runs
in the process (they start no progress thread by default), so whoever overlaps one with
computation should call `is_completed()` now and then: DistributedDataParallel does it
from its gradient hooks.
"""
from __future__ import annotations

import pickle
from collections.abc import Callable
from datetime import timedelta

import numpy as np
from mpi4py import MPI

from minigrad.backend import require_cuda
from minigrad.distributed.arrivals import ArrivalBoard
from minigrad.distributed.reduce_op import ReduceOp, reduction_plan
from minigrad.distributed.timeouts import Ticket

_MPI_OPS = {ReduceOp.SUM: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
            ReduceOp.MAX: MPI.MAX}


class MPIWork:
    """A collective in flight (PyTorch's `Work`): `wait()` blocks until it is done and its
    result is in the tensor, or raises when it passes its deadline; `is_completed()` asks
    without blocking."""

    def __init__(self, board: ArrivalBoard, ticket: Ticket, request,
                 finish: Callable[[], None] | None = None):
        self._board, self._ticket = board, ticket
        self._request = request
        self._finish = finish

    def wait(self) -> bool:
        self._board.wait(self._request, self._ticket)
        self._run_finish()
        return True

    def is_completed(self) -> bool:
        if self._request.Test():
            self._run_finish()
            return True
        return False

    def _run_finish(self) -> None:
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()


class MPIBackend:
    """The collectives of one MPI communicator, on NumPy (or, staged, CuPy) arrays.
    `collective` names the caller's collective in timeout errors."""

    name = "mpi"

    def __init__(self, comm, board: ArrivalBoard):
        self.comm = comm
        self.board = board
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def all_reduce(self, array, op: ReduceOp, collective: str = "all_reduce") -> MPIWork:
        """Reduce `array` in place over all ranks."""
        plan = reduction_plan(op, array.dtype, float16_on_wire=False)
        wire, in_place = _wire_array(array, plan.wire_dtype)
        ticket = self.board.start(collective)
        request = self.comm.Iallreduce(MPI.IN_PLACE, wire, _MPI_OPS[plan.wire_op])

        def finish() -> None:
            if plan.average:
                np.divide(wire, self.size, out=wire)
            if not in_place:
                _write_back(array, wire)

        return MPIWork(self.board, ticket, request, finish)

    def broadcast(self, array, src: int, collective: str = "broadcast") -> MPIWork:
        """Overwrite `array` with rank `src`'s values."""
        wire, in_place = _wire_array(array, array.dtype)
        ticket = self.board.start(collective)
        request = self.comm.Ibcast(_as_bytes(wire), root=src)
        if in_place or self.rank == src:
            return MPIWork(self.board, ticket, request)
        return MPIWork(self.board, ticket, request, lambda: _write_back(array, wire))

    def all_gather(self, outputs: list, array, collective: str = "all_gather",
                   timeout: timedelta | None = None) -> MPIWork:
        """Fill outputs[i] (arrays of array's shape and dtype) with rank i's `array`
        (`timeout`: by default the group's)."""
        wire, _ = _wire_array(array, array.dtype)
        gathered = np.empty(self.size * wire.nbytes, dtype=np.uint8)
        ticket = self.board.start(collective, timeout)
        request = self.comm.Iallgather(_as_bytes(wire), gathered)

        def finish() -> None:
            for index, chunk in enumerate(np.split(gathered, self.size)):
                _write_back(outputs[index], chunk.view(wire.dtype).reshape(wire.shape))

        return MPIWork(self.board, ticket, request, finish)

    def all_gather_object(self, obj, collective: str) -> list:
        """Every rank's `obj` (pickled), in rank order."""
        payload = np.frombuffer(bytearray(pickle.dumps(obj)), dtype=np.uint8)
        lengths = [np.zeros(1, dtype=np.int64) for _ in range(self.size)]
        self.all_gather(lengths, np.array([payload.size]), collective).wait()
        counts = [int(length[0]) for length in lengths]
        gathered = np.empty(sum(counts), dtype=np.uint8)
        ticket = self.board.start(collective)
        request = self.comm.Iallgatherv(payload, [gathered, counts, MPI.BYTE])
        self.board.wait(request, ticket)
        ends = np.cumsum(counts)
        return [pickle.loads(gathered[end - count:end].tobytes())
                for count, end in zip(counts, ends)]

    def broadcast_object(self, obj, src: int, collective: str):
        """Rank `src`'s `obj` (pickled), on every rank."""
        payload = np.frombuffer(bytearray(pickle.dumps(obj) if self.rank == src else b""),
                                dtype=np.uint8)
        length = np.array([payload.size])
        self.broadcast(length, src, collective).wait()
        if self.rank != src:
            payload = np.empty(int(length[0]), dtype=np.uint8)
        self.broadcast(payload, src, collective).wait()
        return pickle.loads(payload.tobytes())


def _wire_array(array, wire_dtype) -> tuple[np.ndarray, bool]:
    """(a C-contiguous host array of wire_dtype with array's values, whether it is array's
    own memory). A bool array travels as its uint8 bytes."""
    wire_dtype = np.dtype(wire_dtype)
    if not isinstance(array, np.ndarray):  # a CuPy array: copy to the host
        host = array.get()
        return _converted(host, wire_dtype), False
    if array.flags.c_contiguous:
        if array.dtype == wire_dtype:
            return array, True
        if array.dtype == np.bool_ and wire_dtype == np.uint8:
            return array.view(np.uint8), True
    return _converted(array, wire_dtype), False


def _converted(host: np.ndarray, wire_dtype: np.dtype) -> np.ndarray:
    if host.dtype == np.bool_ and wire_dtype == np.uint8:
        return np.ascontiguousarray(host).view(np.uint8)
    return np.ascontiguousarray(host, dtype=wire_dtype)


def _as_bytes(wire: np.ndarray) -> np.ndarray:
    """The raw bytes of a C-contiguous array: broadcast and gather need no MPI type."""
    return wire.reshape(-1).view(np.uint8)


def _write_back(array, wire: np.ndarray) -> None:
    """Copy the wire's values into `array` (NumPy or CuPy), casting back to its dtype."""
    if array.dtype == np.bool_ and wire.dtype == np.uint8:
        values = wire.view(np.bool_)
    else:
        values = wire.astype(array.dtype, copy=False)
    values = values.reshape(array.shape)
    if isinstance(array, np.ndarray):
        np.copyto(array, values)
    else:  # a CuPy array
        array[...] = require_cuda().asarray(values)
