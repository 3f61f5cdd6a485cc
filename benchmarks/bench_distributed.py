"""Data-parallel training: minigrad's DistributedDataParallel over MPI at 1 and 2 ranks,
against PyTorch's DistributedDataParallel over gloo, and the all-reduce bandwidth.

    python -m benchmarks.bench_distributed                       # both configs, all rows
    python -m benchmarks.bench_distributed --config toy_translate --steps 10
    python -m benchmarks.bench_distributed --framework minigrad  # without the PyTorch rows

Each row is one job under `mpiexec -n RANKS`, one BLAS thread per rank. Every rank trains
the configuration's model (benchmarks/bench_train.py's, and its PyTorch twin) on its own
batch of the configuration's size, so the global batch is the per-rank batch x ranks; at
1 rank the plain model trains (no DDP: the baseline a user has without distribution), at
2 ranks the DDP-wrapped one. A step's time is the slowest rank's; the table gives the
median over the timed steps, after a warm-up, and global target tokens per second.
Scaling efficiency = (2-rank tok/s) / (2 x 1-rank tok/s).

The bandwidth table times the all-reduce DDP uses (non-blocking MPI, in place) at 2 ranks
for sizes from 4 KiB to 64 MiB; "bus bandwidth" is NCCL's convention, 2(N-1)/N x bytes /
time, the rate each rank's link carries in a ring all-reduce. The cost-model table checks
one 2-rank step against compute + all-reduce of the gradients (what would be exposed if
nothing overlapped backward).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_train import CONFIGS, Config, make_batch, toy_translate_config
from benchmarks.timing import print_table

ROOT = Path(__file__).resolve().parents[1]
WARMUP_STEPS = 3
BANDWIDTH_SIZES = [2**k for k in range(12, 27, 2)]  # 4 KiB .. 64 MiB
FRAMEWORKS = ("minigrad", "torch")
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def bench_configs() -> dict[str, Config]:
    """toy_translate (the default of python -m train.toy_translate) and small (the
    d_model-128, vocabulary-1000 configuration of bench_train.py)."""
    return {"toy_translate": toy_translate_config(),
            "small": CONFIGS["small"]}


# ----------------------------------------------------------------------------- in the ranks


def _comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def minigrad_step(config: Config, rank: int, world: int):
    """A training step of minigrad; DDP-wrapped when world > 1. Also returns the bytes of
    the gradients one step averages."""
    import minigrad.distributed as dist
    from benchmarks.bench_train import minigrad_step_fn
    from minigrad.nn.parallel import DistributedDataParallel

    models = []

    def wrap(model):
        models.append(model)
        if world == 1:
            return model
        dist.init_process_group("mpi")
        # the positional tables are the only buffers, and they never change
        return DistributedDataParallel(model, broadcast_buffers=False)

    step = minigrad_step_fn(config, make_batch(config, seed=rank), "cpu", wrap=wrap)
    grad_bytes = sum(p.array.nbytes for p in models[0].parameters())
    return step, grad_bytes


def torch_step(config: Config, rank: int, world: int):
    """The same step in PyTorch, DDP over gloo (on the loopback) when world > 1."""
    import socket

    import torch

    from benchmarks.rivals import torch_model

    torch.set_num_threads(1)
    wrap = None
    if world > 1:
        port = None
        if rank == 0:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
        port = _comm().bcast(port, root=0)
        torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                             rank=rank, world_size=world)

        def wrap(model):
            return torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)

    step = torch_model.step_fn(config, make_batch(config, seed=rank), "cpu", wrap=wrap)
    return step, None


def train_worker(framework: str, config: Config, steps: int) -> None:
    """(In each rank) time `steps` training steps; rank 0 prints the slowest rank's time
    of each step as JSON."""
    comm = _comm()
    rank, world = comm.Get_rank(), comm.Get_size()
    build = minigrad_step if framework == "minigrad" else torch_step
    step, grad_bytes = build(config, rank, world)
    for _ in range(WARMUP_STEPS):
        step()
    times = []
    for _ in range(steps):
        comm.Barrier()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    every_rank = comm.gather(times, root=0)
    if rank == 0:
        slowest = np.max(every_rank, axis=0)
        print(json.dumps({"step_times": slowest.tolist(), "grad_bytes": grad_bytes}))


def allreduce_worker(repeats: int) -> None:
    """(In each rank) median time of DDP's all-reduce (float32, in place) per size."""
    import minigrad.distributed as dist
    from minigrad.distributed import ReduceOp
    from minigrad.distributed.group import default_group

    dist.init_process_group("mpi")
    group = default_group("bench")
    comm = group.mpi.comm
    medians = {}
    for size in BANDWIDTH_SIZES:
        buffer = np.ones(size // 4, dtype=np.float32)
        times = []
        for repeat in range(repeats + 2):
            comm.Barrier()
            start = time.perf_counter()
            group.mpi.all_reduce(buffer, ReduceOp.SUM).wait()
            if repeat >= 2:  # two warm-up rounds
                times.append(time.perf_counter() - start)
        medians[size] = float(np.median(np.max(comm.allgather(times), axis=0)))
    if group.rank == 0:
        print(json.dumps({"allreduce_seconds": medians, "ranks": group.size}))


# ----------------------------------------------------------------------------- the driver


def run_job(ranks: int, worker_args: list[str], timeout: float = 600) -> dict:
    """Start `ranks` ranks of this module as workers; the JSON rank 0 printed."""
    from minigrad.distributed.launch import mpiexec_command

    command = [*mpiexec_command(ranks), sys.executable, "-m", "benchmarks.bench_distributed",
               *worker_args]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n"
                           f"{result.stdout}\n{result.stderr}")
    return json.loads([line for line in result.stdout.splitlines() if line.startswith("{")][-1])


def measure(names: list[str], frameworks: list[str], steps: int) -> dict:
    """{(config, framework, ranks): {"seconds": median step, "grad_bytes": ...}}."""
    results = {}
    for name in names:
        for framework in frameworks:
            for ranks in (1, 2):
                job = run_job(ranks, ["--worker", "train", "--framework", framework,
                                      "--config", name, "--steps", str(steps)])
                results[name, framework, ranks] = {
                    "seconds": float(np.median(job["step_times"])),
                    "grad_bytes": job["grad_bytes"]}
                print(f"[{name} {framework} {ranks} rank(s)] "
                      f"{results[name, framework, ranks]['seconds'] * 1e3:.1f} ms/step",
                      file=sys.stderr)
    return results


def throughput_rows(configs: dict, results: dict) -> list[list[str]]:
    rows = []
    for (name, framework, ranks), result in results.items():
        config = configs[name]
        tokens = config.batch * config.length * ranks
        seconds = result["seconds"]
        efficiency = ratio = "-"
        if ranks == 2:
            # the same per-rank batch at 1 and 2 ranks: the ratio of step times
            efficiency = f"{results[name, framework, 1]['seconds'] / seconds:.2f}"
            if framework == "minigrad" and (name, "torch", 2) in results:
                ratio = f"{seconds / results[name, 'torch', 2]['seconds']:.2f}"
        shape = (f"{config.d_model}/{config.layers}+{config.layers}/"
                 f"b{config.batch}xL{config.length} per rank")
        label = "PyTorch DDP (gloo)" if framework == "torch" else "minigrad DDP (MPI)"
        if ranks == 1:
            label = "PyTorch, 1 process" if framework == "torch" else "minigrad, 1 process"
        rows.append([name, shape, label, str(ranks), f"{seconds * 1e3:.1f}",
                     f"{tokens / seconds:,.0f}", efficiency, ratio])
    return rows


def bandwidth_rows(allreduce: dict) -> list[list[str]]:
    ranks = allreduce["ranks"]
    rows = []
    for size, seconds in allreduce["allreduce_seconds"].items():
        size = int(size)
        bus = 2 * (ranks - 1) / ranks * size / seconds
        rows.append([_bytes(size), f"{seconds * 1e6:,.0f}", f"{size / seconds / 1e9:.2f}",
                     f"{bus / 1e9:.2f}"])
    return rows


def allreduce_time(allreduce: dict, size: int) -> float:
    """The measured all-reduce time of `size` bytes, interpolated in log-log."""
    sizes = np.array([int(s) for s in allreduce["allreduce_seconds"]], dtype=float)
    seconds = np.array(list(allreduce["allreduce_seconds"].values()))
    return float(np.exp(np.interp(np.log(size), np.log(sizes), np.log(seconds))))


def cost_model_rows(results: dict, allreduce: dict) -> list[list[str]]:
    """One 2-rank minigrad step against compute (the 1-rank step) + all-reduce of the
    gradients: measured - compute is the communication that was not hidden."""
    rows = []
    for (name, framework, ranks), result in results.items():
        if framework != "minigrad" or ranks != 2:
            continue
        compute = results[name, "minigrad", 1]["seconds"]
        grad_bytes = result["grad_bytes"]
        communication = allreduce_time(allreduce, grad_bytes)
        measured = result["seconds"]
        rows.append([name, _bytes(grad_bytes), f"{compute * 1e3:.1f}",
                     f"{communication * 1e3:.2f}", f"{(compute + communication) * 1e3:.1f}",
                     f"{measured * 1e3:.1f}", f"{(measured - compute) * 1e3:+.1f}"])
    return rows


def _bytes(size: float) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size:.0f} B"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", choices=list(bench_configs()),
                        help="configurations to run (default: both)")
    parser.add_argument("--framework", action="append", choices=FRAMEWORKS,
                        help="frameworks to run (default: both)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per job")
    parser.add_argument("--repeats", type=int, default=20,
                        help="timed all-reduces per size")
    parser.add_argument("--worker", choices=("train", "allreduce"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    configs = bench_configs()
    if args.worker == "train":
        train_worker(args.framework[0], configs[args.config[0]], args.steps)
        return
    if args.worker == "allreduce":
        allreduce_worker(args.repeats)
        return
    configs = {name: configs[name] for name in (args.config or configs)}
    frameworks = args.framework or list(FRAMEWORKS)
    allreduce = run_job(2, ["--worker", "allreduce", "--repeats", str(args.repeats)])
    results = measure(list(configs), frameworks, args.steps)
    print("Training throughput (global batch = per-rank batch x ranks):")
    print_table(["config", "d_model/layers/batch", "run", "ranks", "ms/step",
                 "target tok/s", "scaling efficiency", "minigrad/PyTorch time"],
                throughput_rows(configs, results))
    print(f"\nAll-reduce at {allreduce['ranks']} ranks (float32, in place, MPI):")
    print_table(["size", "time us", "algorithm GB/s", "bus GB/s"], bandwidth_rows(allreduce))
    print("\nOne 2-rank minigrad step against the cost model (compute + all-reduce):")
    print_table(["config", "gradients", "compute ms (1 rank)", "all-reduce ms",
                 "sum ms (nothing hidden)", "measured ms", "measured - compute ms"],
                cost_model_rows(results, allreduce))


if __name__ == "__main__":
    main()
