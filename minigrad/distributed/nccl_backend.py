"""Collectives on GPU arrays over NCCL (CuPy's `cupy.cuda.nccl`): one GPU per rank.

Set-up: each rank takes the GPU of its local rank on its machine (found with an MPI
shared-memory split, so it works under any launcher), rank 0 makes the NCCL unique id and
MPI broadcasts it, and every rank joins the communicator with it.

Streams: NCCL runs on a side stream of its own, so that a bucket's all-reduce overlaps
the backward kernels still queued on the current stream. A collective first makes the
side stream wait for everything queued so far on the current stream (the gradient must
be written before it is sent), launches NCCL and any follow-up (the division of an
average, the copy back of a staged array) on the side stream, and records an event.
`NCCLWork.wait()` makes the *current stream* wait for that event and returns at once, as
PyTorch's NCCL work does: the host never blocks, kernels queued later see the result.

Timeouts: since the host never waits, a watchdog thread does (as PyTorch's NCCL watchdog):
every WATCHDOG_SECONDS it drops the collectives whose event has fired and checks NCCL for
asynchronous errors; when the oldest one is still pending past its deadline, or NCCL
reports an error, it prints the error (for a timeout: the ranks that did not arrive, read
from the ArrivalBoard), aborts the NCCL communicator and ends the job with MPI_Abort.
"""
from __future__ import annotations

import collections
import sys
import threading
import time

import numpy as np

from minigrad.backend import require_cuda
from minigrad.distributed.arrivals import ArrivalBoard
from minigrad.distributed.job_abort import abort_job
from minigrad.distributed.reduce_op import ReduceOp, reduction_plan

WATCHDOG_SECONDS = 0.1


class NCCLWork:
    """A collective queued on the NCCL stream: `wait()` orders the current stream after
    it; `is_completed()` tells whether the GPU has finished it."""

    def __init__(self, done_event, keep_alive: tuple):
        self._done = done_event
        self._keep_alive = keep_alive  # arrays NCCL reads or writes until the event

    def wait(self) -> bool:
        require_cuda().cuda.get_current_stream().wait_event(self._done)
        return True

    def is_completed(self) -> bool:
        return bool(self._done.done)


class NCCLBackend:
    """The collectives of one NCCL communicator (every rank on its own GPU)."""

    name = "nccl"

    def __init__(self, mpi_comm, rank: int, size: int, board: ArrivalBoard):
        from mpi4py import MPI

        cupy = require_cuda()
        from cupy.cuda import nccl

        if not nccl.available:
            raise RuntimeError(f"init_process_group('nccl'): rank {rank}: CuPy was built "
                               "without NCCL here (pip install 'minigrad[gpu]' brings it)")
        machine = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED)  # the ranks on this machine
        local_rank = machine.Get_rank()
        machine.Free()
        gpus = cupy.cuda.runtime.getDeviceCount()
        if local_rank >= gpus:
            raise RuntimeError(
                f"init_process_group('nccl'): rank {rank} is process {local_rank} on its "
                f"machine, which has {gpus} GPU(s); start at most one rank per GPU")
        cupy.cuda.Device(local_rank).use()
        unique_id = nccl.get_unique_id() if rank == 0 else None
        unique_id = mpi_comm.bcast(unique_id, root=0)
        self.comm = nccl.NcclCommunicator(size, unique_id, rank)
        self.rank, self.size, self.device = rank, size, local_rank
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self._cupy, self._nccl = cupy, nccl
        self._types = {np.dtype(name): getattr(nccl, f"NCCL_{name.upper()}") for name in
                       ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
                        "float32", "float64")}
        self._ops = {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.PRODUCT: nccl.NCCL_PROD,
                     ReduceOp.MIN: nccl.NCCL_MIN, ReduceOp.MAX: nccl.NCCL_MAX}
        self._mpi_comm, self._board = mpi_comm, board
        self._pending: collections.deque = collections.deque()  # (event, ticket), oldest first
        self._stop = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="nccl-watchdog",
                                          daemon=True)
        self._watchdog.start()

    def all_reduce(self, array, op: ReduceOp, collective: str = "all_reduce") -> NCCLWork:
        plan = reduction_plan(op, array.dtype, float16_on_wire=True)
        ticket = self._board.start(collective)
        with self._on_side_stream():
            wire, in_place = self._wire_array(array)
            self.comm.allReduce(wire.data.ptr, wire.data.ptr, wire.size,
                                self._nccl_type(wire.dtype), self._ops[plan.wire_op],
                                self.stream.ptr)
            if plan.average:
                wire /= self.size
            if not in_place:
                _write_back(array, wire)
        return self._watched(ticket, (array, wire))

    def broadcast(self, array, src: int, collective: str = "broadcast") -> NCCLWork:
        ticket = self._board.start(collective)
        with self._on_side_stream():
            wire, in_place = self._wire_array(array)
            raw = _as_bytes(wire)
            self.comm.broadcast(raw.data.ptr, raw.data.ptr, raw.size, self._nccl.NCCL_UINT8,
                                src, self.stream.ptr)
            if not in_place:
                _write_back(array, wire)
        return self._watched(ticket, (array, wire))

    def all_gather(self, outputs: list, array, collective: str = "all_gather") -> NCCLWork:
        cupy = self._cupy
        ticket = self._board.start(collective)
        with self._on_side_stream():
            wire, _ = self._wire_array(array)
            gathered = cupy.empty(self.size * wire.nbytes, dtype=cupy.uint8)
            raw = _as_bytes(wire)
            self.comm.allGather(raw.data.ptr, gathered.data.ptr, raw.size,
                                self._nccl.NCCL_UINT8, self.stream.ptr)
            for index in range(self.size):
                chunk = gathered[index * raw.size:(index + 1) * raw.size]
                _write_back(outputs[index], chunk.view(wire.dtype).reshape(wire.shape))
        return self._watched(ticket, (array, wire, gathered, *outputs))

    def destroy(self) -> None:
        self._stop.set()
        self._watchdog.join()
        self.stream.synchronize()
        self.comm.destroy()

    def _watched(self, ticket, keep_alive: tuple) -> NCCLWork:
        """The work of the collective just queued, handed to the watchdog too."""
        done = self.stream.record()
        self._pending.append((done, ticket))
        return NCCLWork(done, keep_alive)

    def _watch(self) -> None:
        """The watchdog thread (see the module's docstring)."""
        self._cupy.cuda.Device(self.device).use()
        while not self._stop.wait(WATCHDOG_SECONDS):
            while self._pending and self._pending[0][0].done:
                self._pending.popleft()
            try:
                self.comm.check_async_error()
            except self._nccl.NcclError as error:
                self._end_job(f"NCCL reported an error on rank {self.rank}: {error}")
                return
            if self._pending and time.monotonic() > self._pending[0][1].deadline:
                self._end_job(str(self._board.expired(self._pending[0][1])))
                return

    def _end_job(self, message: str) -> None:
        """Print `message`, abort the NCCL communicator and every rank: the main thread
        may be blocked in CUDA waiting for the collective, so it cannot be told."""
        sys.stderr.write(f"[rank {self.rank}] {message}\n")
        self.comm.abort()
        abort_job(self._mpi_comm)

    def _on_side_stream(self):
        """Order the side stream after the current one, then make it current."""
        self.stream.wait_event(self._cupy.cuda.get_current_stream().record())
        return self.stream

    def _wire_array(self, array):
        """(a C-contiguous array NCCL can send, whether it is `array`'s own memory); bool
        travels as uint8."""
        cupy = self._cupy
        if array.flags.c_contiguous:
            if array.dtype == np.bool_:
                return array.view(cupy.uint8), True
            return array, True
        wire = cupy.ascontiguousarray(array)
        return (wire.view(cupy.uint8) if wire.dtype == np.bool_ else wire), False

    def _nccl_type(self, dtype) -> int:
        found = self._types.get(np.dtype(dtype))
        if found is None:
            raise TypeError(f"NCCL cannot reduce {np.dtype(dtype)} arrays")
        return found


def _as_bytes(wire):
    return wire.reshape(-1).view(np.uint8)


def _write_back(array, wire) -> None:
    """Copy the wire's values into `array`, as array's dtype (bool from its bytes)."""
    values = wire.view(np.bool_) if array.dtype == np.bool_ else wire
    array[...] = values.reshape(array.shape)
