"""The default process group: which rank this process is, how many there are, and the
backends that connect them. Rank and world size come from the MPI launcher
(`mpiexec -n 2 python train.py`), so there is no address, port or store to set up.

The group is the one piece of process-wide state of minigrad.distributed, as in PyTorch:
`init_process_group` creates it, `destroy_process_group` ends it.
"""
from __future__ import annotations

import atexit
import sys
from datetime import timedelta

import numpy as np

from minigrad.backend import cupy_or_none
from minigrad.distributed.job_abort import abort_job
from minigrad.distributed.timeouts import (
    DistBackendError,
    as_timeout,
    default_pg_nccl_timeout,
    default_pg_timeout,
)

BACKENDS = ("mpi", "nccl")


class ProcessGroup:
    """All the ranks of the job. CPU arrays always go over MPI; with the "nccl" backend,
    GPU arrays go over NCCL (like PyTorch's "cpu:gloo,cuda:nccl"). A collective that
    does not complete within `timeout` raises (see timeouts.py)."""

    def __init__(self, backend: str, mpi_comm, timeout: timedelta):
        # the backends import mpi4py (and CuPy), which are optional: only when used
        from minigrad.distributed.arrivals import ArrivalBoard
        from minigrad.distributed.mpi_backend import MPIBackend

        self.backend = backend
        self.timeout = timeout
        self.arrivals = ArrivalBoard(mpi_comm, timeout)
        self.mpi = MPIBackend(mpi_comm, self.arrivals)
        self.rank, self.size = self.mpi.rank, self.mpi.size
        self.nccl = None
        if backend == "nccl":
            # needs CuPy with NCCL, which only GPU machines have
            from minigrad.distributed.nccl_backend import NCCLBackend

            self.nccl = NCCLBackend(mpi_comm, self.rank, self.size, self.arrivals)

    def backend_for(self, array):
        """The backend that moves `array`: MPI for host arrays, NCCL (when there is one)
        for GPU arrays."""
        if self.nccl is None or isinstance(array, np.ndarray):
            return self.mpi
        return self.nccl

    def gather_objects(self, obj, collective: str) -> list:
        """Every rank's `obj` (pickled over MPI), in rank order; `collective` names the
        caller in a timeout error."""
        return self.mpi.all_gather_object(obj, collective)


_default: ProcessGroup | None = None
_previous_excepthook = None


def is_available() -> bool:
    """True when mpi4py is installed (pip install 'minigrad[distributed]'). Importing the
    package starts nothing: MPI starts with init_process_group."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


is_mpi_available = is_available


def is_nccl_available() -> bool:
    """True when mpi4py and CuPy with NCCL are installed and a GPU is visible."""
    if not is_available() or cupy_or_none() is None:
        return False
    from cupy.cuda import nccl

    return bool(nccl.available)


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1,
                       rank: int = -1) -> None:
    """Join the job started by `mpiexec -n N python ...` (a plain `python ...` is a job of
    one). backend "mpi" (the default) moves CPU tensors over MPI; "nccl" gives each rank
    the GPU of its local rank and moves GPU tensors over NCCL (CPU tensors still over
    MPI). `world_size` and `rank`, when given, are checked against the launcher's; the
    launcher also connects the ranks, so `init_method` must be None.

    `timeout` (a datetime.timedelta; default 30 minutes, 10 under "nccl", as PyTorch's):
    a collective that does not complete in time raises a DistBackendError naming the ranks
    that did not arrive and aborts the group. From here on an uncaught exception on any
    rank prints its traceback and aborts every rank (MPI_Abort), so a failing rank ends
    the job instead of leaving the others waiting.
    """
    global _default
    if _default is not None:
        raise RuntimeError("init_process_group: the default process group is already "
                           "initialized; call destroy_process_group() first")
    backend = "mpi" if backend is None else str(backend).lower()
    if backend not in BACKENDS:
        hint = " (gloo is PyTorch's CPU backend; minigrad's is 'mpi')" if backend == "gloo" \
            else ""
        raise ValueError(f"init_process_group: unknown backend {backend!r}, expected one of "
                         f"{', '.join(map(repr, BACKENDS))}{hint}")
    if init_method is not None:
        raise ValueError(f"init_process_group: init_method={init_method!r} is not used: the "
                         "MPI launcher (mpiexec) starts and connects the ranks; leave it None")
    timeout = as_timeout(timeout, "init_process_group",
                         default_pg_nccl_timeout if backend == "nccl" else default_pg_timeout)
    if not is_available():
        raise RuntimeError("init_process_group: mpi4py is not installed; "
                           "pip install 'minigrad[distributed]' (mpi4py and MPICH)")
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    launched = {"world_size": comm.Get_size(), "rank": comm.Get_rank()}
    for name, value in (("world_size", world_size), ("rank", rank)):
        if value != -1 and value != launched[name]:
            raise ValueError(f"init_process_group: {name}={value} but the MPI launcher "
                             f"started this process with {name} {launched[name]}")
    # first: a rank that fails while setting up NCCL must not leave the others waiting
    _install_abort_on_uncaught_exception(comm)
    _default = ProcessGroup(backend, comm, timeout)
    atexit.register(_leave_at_exit)


def destroy_process_group() -> None:
    """Leave the process group once every rank calls destroy_process_group (waiting up
    to the group's timeout; MPI itself is finalized when the process exits)."""
    global _default
    group = default_group("destroy_process_group")
    if group.nccl is not None:
        group.nccl.destroy()
    group.arrivals.close("destroy_process_group", "called destroy_process_group")
    atexit.unregister(_leave_at_exit)
    _default = None
    _restore_excepthook()


def is_initialized() -> bool:
    return _default is not None


def get_rank() -> int:
    """This process's rank, 0 .. world size - 1."""
    return default_group("get_rank").rank


def get_world_size() -> int:
    return default_group("get_world_size").size


def get_backend() -> str:
    return default_group("get_backend").backend


def default_group(caller: str) -> ProcessGroup:
    """The process group, or a RuntimeError naming `caller` when there is none yet."""
    if _default is None:
        raise RuntimeError(f"{caller}: the default process group has not been initialized; "
                           "call minigrad.distributed.init_process_group() first")
    return _default


def _install_abort_on_uncaught_exception(comm) -> None:
    global _previous_excepthook
    _previous_excepthook = sys.excepthook
    rank, size = comm.Get_rank(), comm.Get_size()

    def abort_on_uncaught_exception(exc_type, exc, traceback) -> None:
        """Print the traceback, then take every rank down: the others may be waiting in
        a collective for this one, and without an abort they would wait forever."""
        sys.stderr.write(f"[rank {rank}] uncaught exception, aborting all {size} ranks:\n")
        _previous_excepthook(exc_type, exc, traceback)
        atexit.unregister(_leave_at_exit)  # MPI_Abort may run the exit handlers
        abort_job(comm)

    sys.excepthook = abort_on_uncaught_exception


def _leave_at_exit() -> None:
    """At the exit of a script that did not destroy the group: end the job if a collective
    failed here and the error was caught (the other ranks may wait for this one); else
    post that this rank has ended (a rank waiting for it says so) and close the group with
    the others, waiting up to twice the timeout, so that a rank still waiting inside the
    program, whose traceback shows where, reports a problem first."""
    board = _default.arrivals
    if board.failure is not None:
        _abort_at_exit("the process group was aborted after a failed collective")
        return
    try:
        board.close("the exit of the script", "ended its script", 2 * _default.timeout)
    except DistBackendError as error:
        _abort_at_exit(str(error))


def _abort_at_exit(reason: str) -> None:
    sys.stderr.write(f"[rank {_default.rank}] {reason}; aborting all {_default.size} ranks "
                     "at exit\n")
    abort_job(_default.mpi.comm)


def _restore_excepthook() -> None:
    global _previous_excepthook
    if _previous_excepthook is not None:
        sys.excepthook = _previous_excepthook
    _previous_excepthook = None
