"""DistributedDataParallel.join with uneven inputs, against NumPy by hand and against
PyTorch's DDP join, on every rank.

Run by tests/test_distributed.py as `mpiexec -n 2 python tests/mpi/join.py`. In each case
rank r trains on its own number of batches inside `with model.join():` and every rank
must finish, with the model

- by hand: a Linear layer under the mean squared error and SGD, whose gradient is
  2 / (B * outputs) * (pred - y)^T x; each step subtracts lr * (the sum of the gradients
  of the ranks that still have a batch) / divisor, the divisor being the world size
  (divide_by_initial_world_size=True) or the number of those ranks;
- PyTorch's: the same model, weights, batches and settings in
  torch.nn.parallel.DistributedDataParallel over gloo, run in these same two processes,
  for a model with BatchNorm (its running statistics are buffers), a branch some steps
  skip (find_unused_parameters), gradient accumulation (no_sync), a rank with no batch at
  all, and either rank running out first.

Also: throw_on_early_termination raises the two errors on their ranks, after which the
group still works. Everything in float64, to 1e-12.
"""
import socket
from contextlib import nullcontext
from datetime import timedelta
from types import SimpleNamespace

import numpy as np
import torch
import torch.distributed
from collectives import check_still_in_step, expect_error  # (tests/mpi/ is on sys.path)

import minigrad as mg
import minigrad.distributed as dist
import minigrad.nn.functional as F
from minigrad import nn, optim
from minigrad.nn.parallel import DistributedDataParallel as DDP

TOLERANCE = 1e-12
LR = 0.1
ROWS = 6  # per batch and rank

MINIGRAD = SimpleNamespace(nn=nn, F=F, optim=optim, DDP=DDP, tensor=mg.tensor)
TORCH = SimpleNamespace(nn=torch.nn, F=torch.nn.functional, optim=torch.optim,
                        DDP=torch.nn.parallel.DistributedDataParallel,
                        tensor=torch.tensor)

# name: batches of rank 0 and rank 1, and the settings
TORCH_CASES = {
    "rank 1 has more batches": ((3, 5), {}),
    "rank 0 has more, divided by the ranks still training": (
        (6, 2), {"divide_by_initial_world_size": False}),
    "rank 0 has no batch": ((0, 3), {}),
    "a branch some steps skip": ((5, 3), {"find_unused_parameters": True}),
    "gradient accumulation": ((7, 4), {"accumulate": 2}),
}


def net_class(framework: SimpleNamespace):
    """The same network in minigrad and in PyTorch (same names, same layers)."""
    nn_ = framework.nn

    class Net(nn_.Module):
        def __init__(self):
            super().__init__()
            self.body = nn_.Sequential(nn_.Linear(4, 8), nn_.BatchNorm1d(8), nn_.Tanh())
            self.head = nn_.Linear(8, 3)
            self.branch = nn_.Linear(8, 3)

        def forward(self, x, use_branch: bool = True):
            hidden = self.body(x)
            return self.head(hidden) + self.branch(hidden) if use_branch else self.head(hidden)

    return Net


def batches(rank: int, count: int, outputs: int) -> list:
    rng = np.random.default_rng([rank, count, outputs])
    return [(rng.standard_normal((ROWS, 4)), rng.standard_normal((ROWS, outputs)))
            for _ in range(count)]


def shared_batch() -> tuple:
    """The batch every rank trains on after the join."""
    rng = np.random.default_rng(12345)
    return rng.standard_normal((ROWS, 4)), rng.standard_normal((ROWS, 3))


def train(framework, model, my_batches, accumulate: int = 1, divide_by_initial_world_size=True,
          find_unused_parameters=False) -> None:
    """The loop of every case, written once for both frameworks; after the join, one more
    step on a batch every rank has, which finds the ranks in step only if the joined ones
    followed the others (for instance in whether the next forward sends the buffers)."""
    optimizer = framework.optim.SGD(model.parameters(), lr=LR)

    def step(x, y, use_branch: bool, synced: bool) -> None:
        with nullcontext() if synced else model.no_sync():
            kwargs = {"use_branch": use_branch} if find_unused_parameters else {}
            out = model(framework.tensor(x), **kwargs)
            labels = framework.tensor((y.argmax(1) % 3).astype(np.int64))
            framework.F.cross_entropy(out, labels).backward()
        if synced:
            optimizer.step()
            optimizer.zero_grad()

    with model.join(divide_by_initial_world_size=divide_by_initial_world_size):
        for index, (x, y) in enumerate(my_batches):
            step(x, y, use_branch=index % 3 != 1, synced=(index + 1) % accumulate == 0)
    step(*shared_batch(), use_branch=True, synced=True)


def check_against_torch(rank: int) -> int:
    for name, ((first, second), settings) in TORCH_CASES.items():
        my_batches = batches(rank, (first, second)[rank], 3)
        mg.manual_seed(0)
        ours = net_class(MINIGRAD)().double()
        theirs = net_class(TORCH)().double()
        theirs.load_state_dict({key: torch.from_numpy(value.numpy().copy())
                                for key, value in ours.state_dict().items()})
        wrap = {"find_unused_parameters": settings.get("find_unused_parameters", False)}
        initial = ours.head.weight.numpy().copy()
        ours_ddp, theirs_ddp = MINIGRAD.DDP(ours, **wrap), TORCH.DDP(theirs, **wrap)
        train(MINIGRAD, ours_ddp, my_batches, **settings)
        train(TORCH, theirs_ddp, my_batches, **settings)
        expected = theirs.state_dict()
        for key, value in ours.state_dict().items():
            np.testing.assert_allclose(value.numpy(), expected[key].numpy(), rtol=TOLERANCE,
                                       atol=TOLERANCE, err_msg=f"{name}: {key}")
        assert not np.allclose(ours.head.weight.numpy(), initial), f"{name}: no training"
    return len(TORCH_CASES)


def check_by_hand(rank: int, size: int) -> int:
    counts = [3 + 2 * r for r in range(size)]
    every_rank = [batches(r, counts[r], 2) for r in range(size)]
    for divide_by_initial_world_size in (True, False):
        mg.manual_seed(1)
        model = DDP(nn.Linear(4, 2).double())
        weight, bias = model.module.weight.numpy().copy(), model.module.bias.numpy().copy()
        optimizer = optim.SGD(model.parameters(), lr=LR)
        with model.join(divide_by_initial_world_size=divide_by_initial_world_size):
            for x, y in every_rank[rank]:
                optimizer.zero_grad()
                F.mse_loss(model(mg.tensor(x)), mg.tensor(y)).backward()
                optimizer.step()
        for step in range(max(counts)):
            training = [r for r in range(size) if step < counts[r]]
            grad_weight, grad_bias = 0.0, 0.0
            for r in training:
                x, y = every_rank[r][step]
                error = 2 * (x @ weight.T + bias - y) / y.size
                grad_weight, grad_bias = grad_weight + error.T @ x, grad_bias + error.sum(0)
            divisor = size if divide_by_initial_world_size else len(training)
            weight, bias = weight - LR * grad_weight / divisor, bias - LR * grad_bias / divisor
        what = f"by hand, divide_by_initial_world_size={divide_by_initial_world_size}"
        np.testing.assert_allclose(model.module.weight.numpy(), weight, rtol=TOLERANCE,
                                   atol=TOLERANCE, err_msg=what)
        np.testing.assert_allclose(model.module.bias.numpy(), bias, rtol=TOLERANCE,
                                   atol=TOLERANCE, err_msg=what)
    return 2


def check_throw_on_early_termination(rank: int, size: int) -> int:
    model = DDP(nn.Linear(4, 2).double())
    if rank == 0:
        fragments = ["Rank 0 exhausted all inputs."]
    else:
        fragments = ["Detected at least one rank that exhausted inputs. Throwing across all "
                     "ranks."]

    def run() -> None:
        with model.join(throw_on_early_termination=True):
            for x, y in batches(rank, 2 + rank, 2):
                F.mse_loss(model(mg.tensor(x)), mg.tensor(y)).backward()

    expect_error(RuntimeError, fragments, run)
    check_still_in_step(rank, size)
    return 1


def start_torch_gloo(rank: int, size: int) -> None:
    from mpi4py import MPI

    port = None
    if rank == 0:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    port = MPI.COMM_WORLD.bcast(port, root=0)
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                         rank=rank, world_size=size)


def main() -> None:
    dist.init_process_group("mpi", timeout=timedelta(seconds=30))  # a bug ends the job
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    start_torch_gloo(rank, size)
    checks = check_by_hand(rank, size)
    checks += check_against_torch(rank)
    checks += check_throw_on_early_termination(rank, size)
    torch.distributed.destroy_process_group()
    dist.destroy_process_group()
    print(f"rank {rank} of {size}: {checks} join checks passed", flush=True)


if __name__ == "__main__":
    main()
