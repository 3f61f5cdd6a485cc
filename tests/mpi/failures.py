"""A rank that fails in the middle of DDP training: `raise` raises an exception, `kill`
kills the process (SIGKILL). Run by tests/test_distributed.py as
`mpiexec -n 2 python tests/mpi/failures.py raise|kill`: the job must end with a
non-zero exit within seconds, never hang with rank 0 waiting in an all-reduce."""
import os
import signal
import sys

import numpy as np

import minigrad as mg
import minigrad.distributed as dist
import minigrad.nn.functional as F
from minigrad import nn, optim
from minigrad.nn.parallel import DistributedDataParallel as DDP

FAILING_STEP = 3


def main(mode: str) -> None:
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    model = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)))
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(rank)
    for step in range(10_000):
        if rank == 1 and step == FAILING_STEP:
            print(f"rank 1 fails at step {step} ({mode})", flush=True)
            if mode == "raise":
                raise ValueError("rank 1 fails on purpose")
            os.kill(os.getpid(), signal.SIGKILL)
        optimizer.zero_grad()
        x = mg.tensor(rng.standard_normal((8, 4)).astype(np.float32))
        F.cross_entropy(model(x), mg.tensor(rng.integers(0, 2, 8))).backward()
        optimizer.step()
    print("the job was not stopped", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
