"""Memory of a compiled training step against eager: the capture and the steps after it.

    python -m benchmarks.bench_capture_memory [--layers 2] [--steps 3]

bench_train's paper-base Transformer (d_model 512, batch 16 of length 16; `--layers`
encoder and as many decoder layers) trains with Adam three ways, from the same weights:
eagerly; compiled whole (`mg.compile(step, fullgraph=True)`) from its first step, which
is the capture; and compiled after one eager step, so that the capture meets Adam's
moments and the gradients. Each row gives tracemalloc's peak, in MiB above the built
model (the gradients and Adam's state included), of each step in turn: the arrays
NumPy allocates, not the resident set (bench_train measures that). A step of each kind
runs first, untraced, so that loading and compiling kernels is not counted.
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import tracemalloc

import minigrad as mg
from benchmarks.bench_train import CONFIGS, make_batch, minigrad_train_step
from benchmarks.timing import print_table


def train_step(config):
    """A step of a freshly built model and Adam (forward, backward, update)."""
    return minigrad_train_step(config, make_batch(config), "cpu")


def step_peaks(config, steps: int, mode: str) -> list[float]:
    """tracemalloc's peak of each step, MiB above the built model."""
    gc.collect()
    tracemalloc.start()
    try:
        step = train_step(config)
        built = tracemalloc.get_traced_memory()[0]
        if mode == "compiled after an eager step":
            step()
        if mode != "eager":
            step = mg.compile(step, fullgraph=True)
        peaks = []
        for _ in range(steps):
            tracemalloc.reset_peak()
            step()
            peaks.append((tracemalloc.get_traced_memory()[1] - built) / 2**20)
        return peaks
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2, help="encoder (and decoder) layers")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a small model (for tests)")
    args = parser.parse_args()
    config = dataclasses.replace(CONFIGS["paper-base"], layers=args.layers)
    if args.quick:
        config = dataclasses.replace(config, d_model=32, nhead=2, ff=64, vocab=50)
    train_step(config)()  # loads the kernels, and compiles the fused ones, untraced
    mg.compile(train_step(config), fullgraph=True)()
    modes = ("eager", "compiled from its first step", "compiled after an eager step")
    rows = [[mode, *(f"{peak:.1f}" for peak in step_peaks(config, args.steps, mode))]
            for mode in modes]
    print(f"paper-base Transformer, {config.layers}+{config.layers} layers, d_model "
          f"{config.d_model}: tracemalloc peak of each step, MiB above the built model")
    print_table(["run", *(f"step {i + 1}" for i in range(args.steps))], rows)


if __name__ == "__main__":
    main()
