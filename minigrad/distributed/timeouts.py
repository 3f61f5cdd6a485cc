"""How long a collective may take, and what a rank says when one does not complete in time.

A collective that waits for a rank which never comes (a rank that ran out of batches
before the others, one that hangs, one that died) would wait forever. So every collective
has a deadline: the process group's timeout (`init_process_group(timeout=...)`, a
datetime.timedelta; by default 30 minutes, 10 under NCCL, as PyTorch's) or the one given
to the call (`barrier(timeout=...)`). A rank whose collective passes its deadline reads
where the other ranks are (arrivals.py), raises a DistBackendError that names the
collective, the ranks that did not arrive and the likely cause, and aborts the group.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import timedelta
from typing import NamedTuple

default_pg_timeout = timedelta(minutes=30)
default_pg_nccl_timeout = timedelta(minutes=10)
SPIN_SECONDS = 1e-3  # polls that never yield the core: most small collectives end by then


class DistError(RuntimeError):
    """An error of minigrad.distributed (PyTorch's torch.distributed.DistError)."""


class DistBackendError(DistError):
    """A collective failed in the backend: it timed out, or the group was aborted."""


class Ticket(NamedTuple):
    """One started collective: its number in this rank's sequence, its name, and when it
    must be done (time.monotonic seconds)."""

    sequence: int
    collective: str
    timeout: timedelta
    deadline: float


class Arrival(NamedTuple):
    """Where a rank was when it was asked: the number and name of the last collective
    it started, when (time.time seconds), and whether it has left the group."""

    rank: int
    sequence: int
    collective: str
    started: float
    left: str  # "" while in the group, else how it left ("ended its script", ...)


def as_timeout(timeout, caller: str, default: timedelta) -> timedelta:
    """`timeout` checked (a positive datetime.timedelta), or `default` for None."""
    if timeout is None:
        return default
    if not isinstance(timeout, timedelta):
        raise TypeError(f"{caller}: timeout must be a datetime.timedelta, got "
                        f"{timeout!r} ({type(timeout).__name__}); for example "
                        "timeout=datetime.timedelta(seconds=30)")
    if timeout <= timedelta(0):
        raise ValueError(f"{caller}: timeout must be positive, got {timeout}")
    return timeout


def poll_until(done: Callable[[], bool], deadline: float) -> bool:
    """Call done() until it returns True (then return True) or time.monotonic() passes
    `deadline` (then False). MPI moves a request on only inside MPI calls, so done() is
    polled without pause, as MPI's own wait does; after SPIN_SECONDS, the core is offered
    to any other runnable process between polls."""
    spin_end = time.monotonic() + SPIN_SECONDS
    while not done():
        now = time.monotonic()
        if now > deadline:
            return done()
        if now > spin_end:
            os.sched_yield()
    return True


def timeout_message(ticket: Ticket, rank: int, others: list[Arrival | int]) -> str:
    """Why collective `ticket` timed out on `rank`: the ranks that did not arrive and the
    likely cause. `others` has an Arrival for each other rank that answered, and the rank
    number of each that did not."""
    missing, mismatched, left, silent = [], [], [], []
    for other in others:
        if isinstance(other, int):
            silent.append(other)
        elif other.sequence < ticket.sequence:
            missing.append(other)
            if other.left:
                left.append(other)
        elif other.sequence == ticket.sequence and other.collective != ticket.collective:
            mismatched.append(other)
    lines = [f"{ticket.collective} timed out on rank {rank} after {ticket.timeout} (its "
             f"collective #{ticket.sequence}): "]
    now = time.time()
    for other in missing:
        where = (f"it {other.left} after its collective #{other.sequence}" if other.left
                 else f"its last collective is #{other.sequence}" if other.sequence
                 else "it has called no collective")
        if other.sequence:
            where += f" ({other.collective}, started {now - other.started:.1f} s ago)"
        lines.append(f"rank {other.rank} did not arrive: {where}; ")
    for other in mismatched:
        lines.append(f"rank {other.rank} called {other.collective} as its collective "
                     f"#{other.sequence} instead; ")
    for other in silent:
        lines.append(f"rank {other} did not answer (its process may have died, or it "
                     "hangs inside MPI); ")
    lines.append(_likely_cause(missing, mismatched, left, silent))
    lines.append(" The process group is aborted: every later collective raises, and the "
                 "job ends (MPI_Abort) when this error is not caught, else when the process "
                 "exits.")
    return "".join(lines)


def _likely_cause(missing: list, mismatched: list, left: list, silent: list) -> str:
    uneven = ("uneven inputs: a rank ran out of batches and went on (or ended) while the "
              "others still train, so the ranks call different numbers of collectives; "
              "give every rank the same number of batches (DistributedSampler pads its "
              "shares to the same length) or train inside `with model.join():` "
              "(DistributedDataParallel.join)")
    if left or mismatched:
        return f"most likely {uneven}."
    if missing:
        return (f"likely causes: {uneven}; or a rank that hangs (a deadlock, an endless "
                "loop) or computes for longer than the timeout between collectives (pass "
                "a longer one: init_process_group(timeout=datetime.timedelta(...))).")
    if silent:
        return "likely cause: a rank that died or hangs."
    return ("every rank reached this collective, so the transfer itself did not finish in "
            "time: a broken or very slow network, or a timeout too short for the data.")
