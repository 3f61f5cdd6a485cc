"""Before a collective moves data, the ranks check that they agree on what they move.

MPI pairs the calls of different ranks by order alone: if rank 0 all-reduces a (3, 4)
float32 tensor while rank 1 all-reduces a (3, 5) one, or a float64 one, MPI reduces
mismatched bytes or waits forever. So every collective first exchanges a small
description (the collective's name, shape, dtype, device, op or source rank) and any
local problem with the arguments, and every rank raises the same error when they
differ, naming the ranks and what differs. The exchange is one allgather of 16 bytes per
rank (a fingerprint of the description and a problem flag); only when they differ do the
ranks exchange the descriptions themselves to say how. DistributedDataParallel checks its
model once at construction instead of per step.
"""
from __future__ import annotations

import hashlib
from datetime import timedelta

import numpy as np

from minigrad.distributed.group import ProcessGroup


def check_agreement(group: ProcessGroup, collective: str, description: dict,
                    problem: Exception | None = None,
                    timeout: timedelta | None = None) -> None:
    """Raise on every rank unless every rank calls `collective` with the same
    `description` and no rank has a `problem` with its arguments. `timeout` replaces the
    group's for the exchange.

    The rank with the problem raises it (its type, the message prefixed with the
    collective and the rank); the others raise a RuntimeError naming that rank. Ranks
    that disagree all raise a RuntimeError listing the differences."""
    summary = None if problem is None else str(problem)
    if problem is not None:
        problem = type(problem)(f"{collective} on rank {group.rank}: {summary}")
    if group.size == 1:
        if problem is not None:
            raise problem
        return
    mine = np.array([_fingerprint(collective, description), problem is not None],
                    dtype=np.int64)
    fingerprints = np.empty((group.size, 2), dtype=np.int64)
    group.mpi.all_gather(list(fingerprints), mine, collective, timeout).wait()
    if (fingerprints[:, 0] == fingerprints[0, 0]).all() and not fingerprints[:, 1].any():
        return
    everyone = group.gather_objects((collective, description, summary), collective)
    if problem is not None:
        raise problem
    for rank, (_, _, other_problem) in enumerate(everyone):
        if other_problem is not None:
            raise RuntimeError(f"{collective}: rank {rank} could not take part: "
                               f"{other_problem}")
    called = [entry[0] for entry in everyone]
    if len(set(called)) > 1:
        raise RuntimeError(
            f"collective mismatch: {_by_rank(called, 'called')}; every rank must call the "
            "same collectives in the same order")
    differences = []
    for key in description:
        values = [entry[1].get(key) for entry in everyone]
        if any(value != values[0] for value in values):
            differences.append(f"{key}: {_by_rank(values, 'has')}")
    if differences:
        raise RuntimeError(f"{collective}: the ranks disagree on " + "; ".join(differences))


def _fingerprint(collective: str, description: dict) -> int:
    """64 bits that differ, but for a vanishing chance, when the descriptions differ."""
    digest = hashlib.blake2b(repr((collective, description)).encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "little", signed=True)


def _by_rank(values: list, verb: str) -> str:
    """'rank 0 has X, rank 1 has Y' for the ranks that differ from rank 0 (and rank 0)."""
    shown = [rank for rank, value in enumerate(values) if rank == 0 or value != values[0]]
    return ", ".join(f"rank {rank} {verb} {_show(values[rank])}" for rank in shown)


def _show(value) -> str:
    return value if isinstance(value, str) else repr(value)
