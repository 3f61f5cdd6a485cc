"""Collectives that do not complete in time. Run by tests/test_distributed.py as
`mpiexec -n 2 python tests/mpi/timeouts.py MODE` (and `defaults` as a plain job of one);
the test reads the exit status, the time taken and the error each rank prints.

- uneven: DDP training where rank 0 has 3 batches and rank 1 has 5, without join; rank 0
  ends its script after its batches, rank 1 waits in the gradient all-reduce of its 4th.
- uneven-destroy: the same, but rank 0 calls destroy_process_group after its batches, and
  rank 1 takes a second longer for each extra batch, so that rank 0's wait ends first.
- barrier: rank 1 sleeps past the 1 s timeout given to barrier(); rank 0 catches the error,
  checks it and that the group is aborted, then ends its script normally.
- defaults: the timeout of a group made without one, and one given as a timedelta.
"""
import sys
import time
from datetime import timedelta

import numpy as np
from collectives import expect_error  # (a script beside this one: tests/mpi/ is on sys.path)

import minigrad as mg
import minigrad.distributed as dist
import minigrad.nn.functional as F
from minigrad import nn, optim
from minigrad.distributed.group import default_group
from minigrad.nn.parallel import DistributedDataParallel as DDP

TIMEOUT = timedelta(seconds=2)


def train_uneven(destroy_after: bool) -> None:
    dist.init_process_group("mpi", timeout=TIMEOUT)
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(rank)
    for step in range(3 + 2 * rank):
        if destroy_after and step >= 3:
            time.sleep(1)
        optimizer.zero_grad()
        x = mg.tensor(rng.standard_normal((8, 4)).astype(np.float32))
        F.cross_entropy(model(x), mg.tensor(rng.integers(0, 2, 8))).backward()
        optimizer.step()
    print(f"rank {rank} finished its {3 + 2 * rank} batches", flush=True)
    if destroy_after:
        dist.destroy_process_group()


def barrier_with_a_late_rank() -> None:
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    dist.all_reduce(mg.zeros(3))  # collectives #1 (the argument check) and #2
    if rank == 1:
        time.sleep(30)  # ended by rank 0's abort long before
    started = time.monotonic()
    expect_error(dist.DistBackendError,
                 ["barrier timed out on rank 0 after 0:00:01 (its collective #3)",
                  "rank 1 did not arrive: its last collective is #2 (all_reduce, started",
                  "likely causes: uneven inputs", "or a rank that hangs",
                  "The process group is aborted"],
                 lambda: dist.barrier(timeout=timedelta(seconds=1)))
    waited = time.monotonic() - started
    assert 1.0 <= waited < 4, waited
    expect_error(dist.DistBackendError,
                 ["all_reduce: the process group was aborted after an earlier collective "
                  "failed: barrier timed out"], lambda: dist.all_reduce(mg.zeros(3)))
    print(f"rank 0 caught the timeout after {waited:.2f} s and ends its script", flush=True)


def defaults() -> None:
    assert dist.default_pg_timeout == timedelta(minutes=30)
    dist.init_process_group("mpi")
    assert default_group("test").timeout == timedelta(minutes=30)
    dist.destroy_process_group()
    dist.init_process_group("mpi", timeout=timedelta(seconds=3))
    assert default_group("test").timeout == timedelta(seconds=3)
    expect_error(TypeError, ["barrier: timeout must be a datetime.timedelta, got 5 (int)"],
                 lambda: dist.barrier(timeout=5))
    dist.barrier(timeout=timedelta(seconds=1))
    dist.destroy_process_group()
    print("timeout defaults checked", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode in ("uneven", "uneven-destroy"):
        train_uneven(destroy_after=mode == "uneven-destroy")
    elif mode == "barrier":
        barrier_with_a_late_rank()
    else:
        defaults()
