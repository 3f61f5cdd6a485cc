"""Where one minigrad training step spends its time, op by op (mg.profiler).

    python -m benchmarks.profile_step [--config paper-base] [--steps 3]

Builds bench_train.py's model and batch for the configuration, runs one warm-up step, then
`--steps` steps inside `mg.profiler.profile()`, and prints per step: every op type's
forward and backward calls and milliseconds, and its share of the step's wall time. A
backward time includes the ops its rule runs (they are not counted again as forward
calls). The rest of the step (Adam, the Python between ops, the profiler's own timing)
is the last row. `Copy` is the op that makes a strided operand contiguous.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import minigrad as mg  # noqa: E402
from benchmarks.bench_train import CONFIGS, make_batch, minigrad_step_fn, toy_translate_config  # noqa: E402
from benchmarks.timing import print_table  # noqa: E402


def profile_steps(config_name: str, steps: int) -> None:
    configs = {**CONFIGS, "toy_translate": toy_translate_config()}
    config = configs[config_name]
    step = minigrad_step_fn(config, make_batch(config), "cpu")
    step()  # warm-up: kernels compiled or loaded, buffers allocated
    with mg.profiler.profile() as prof:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        wall = (time.perf_counter() - start) / steps
    names = set(prof.forward_calls) | set(prof.backward_calls)
    per_step = {name: (prof.forward_seconds[name] + prof.backward_seconds[name]) / steps
                for name in names}
    rows = []
    for name in sorted(names, key=lambda n: -per_step[n]):
        rows.append([name, f"{prof.forward_calls[name] / steps:.0f}",
                     f"{prof.forward_seconds[name] / steps * 1e3:.1f}",
                     f"{prof.backward_calls[name] / steps:.0f}",
                     f"{prof.backward_seconds[name] / steps * 1e3:.1f}",
                     f"{per_step[name] * 1e3:.1f}", f"{per_step[name] / wall:.1%}"])
    rest = wall - sum(per_step.values())
    rows.append(["(rest: Adam, Python between ops)", "", "", "", "", f"{rest * 1e3:.1f}",
                 f"{rest / wall:.1%}"])
    print(f"{config.name}: one training step, {wall * 1e3:.0f} ms wall (mean of {steps} "
          f"profiled steps), OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    print_table(["op", "fwd calls", "fwd ms", "bwd calls", "bwd ms", "ms", "share of step"],
                rows)
    copy = per_step.get("Copy", 0.0)
    print(f"\nCopy: {prof.forward_calls['Copy'] / steps:.0f} calls, {copy * 1e3:.1f} ms, "
          f"{copy / wall:.1%} of the step")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="paper-base",
                        choices=["small", "toy_translate", "paper-base"])
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    profile_steps(args.config, args.steps)


if __name__ == "__main__":
    main()
