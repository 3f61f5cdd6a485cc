"""Benchmark convolution and pooling, forward + backward through the public API, against
PyTorch CPU.

    python -m benchmarks.bench_conv [--repeats 20] [--case NAME ...]
    OPENBLAS_NUM_THREADS=2 python -m benchmarks.bench_conv      # both libraries on 2 threads

Each case runs `out = layer(x); out.backward(g)` with x and the weights requiring grad,
in float32: minigrad with its fast path (im2col and one matmul per group), minigrad with
the reference twins where a convolution has them (MINIGRAD_KERNELS=numpy: a sum over
kernel taps), and PyTorch when importable. Both libraries get the same number of threads:
OPENBLAS_NUM_THREADS (default 1) for minigrad's BLAS, torch.set_num_threads for PyTorch.
Calls are interleaved within each repeat, so load from other processes hits every
contender alike; the table shows medians and ratios from the one run.
"""
# ruff: noqa: E402  (the thread setting below must come before NumPy is imported)
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg
import minigrad.nn.functional as F
from benchmarks.timing import print_table

try:
    import torch
except ImportError:
    torch = None


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # "conv", "max_pool" or "lenet"
    batch: int
    channels: int
    size: int
    out_channels: int = 0
    kernel: int = 0
    padding: int = 0
    stride: int = 1


CASES = [
    Case("LeNet conv1", "conv", 64, 1, 28, 6, 5),
    Case("LeNet conv2", "conv", 64, 6, 12, 16, 5),
    Case("ResNet 3x3, 32x32", "conv", 32, 64, 32, 64, 3, padding=1),
    Case("ResNet 3x3, 56x56", "conv", 16, 64, 56, 64, 3, padding=1),
    Case("ResNet 3x3 stride 2", "conv", 32, 64, 32, 128, 3, padding=1, stride=2),
    Case("max_pool2d 2x2", "max_pool", 64, 6, 24, kernel=2, stride=2),
    Case("max_pool2d 3x3/2", "max_pool", 32, 64, 56, kernel=3, padding=1, stride=2),
    Case("LeNet-5 forward+backward", "lenet", 64, 1, 28),
]


def _inputs(case: Case, rng) -> dict:
    """float32 arrays for the case: input, weights and an upstream gradient."""
    arrays = {"x": rng.standard_normal((case.batch, case.channels, case.size, case.size))}
    if case.kind == "conv":
        arrays["w"] = rng.standard_normal(
            (case.out_channels, case.channels, case.kernel, case.kernel)) * 0.1
        arrays["b"] = rng.standard_normal(case.out_channels)
    if case.kind == "lenet":
        for name, shape in _lenet_shapes().items():
            arrays[name] = rng.standard_normal(shape) * 0.1
    return {name: a.astype(np.float32) for name, a in arrays.items()}


def _lenet_shapes() -> dict:
    return {"w1": (6, 1, 5, 5), "b1": (6,), "w2": (16, 6, 5, 5), "b2": (16,),
            "w3": (10, 256), "b3": (10,)}


def _layer(case: Case, lib, functional):
    """The case's forward as a function of a dict of tensors, for either library."""
    if case.kind == "conv":
        return lambda t: functional.conv2d(t["x"], t["w"], t["b"], stride=case.stride,
                                           padding=case.padding)
    if case.kind == "max_pool":
        return lambda t: functional.max_pool2d(t["x"], case.kernel, case.stride, case.padding)

    def lenet(t):
        h = functional.max_pool2d(functional.conv2d(t["x"], t["w1"], t["b1"]).relu(), 2)
        h = functional.max_pool2d(functional.conv2d(h, t["w2"], t["b2"]).relu(), 2)
        return functional.linear(h.reshape(h.shape[0], -1), t["w3"], t["b3"])

    return lenet


def _step(case: Case, arrays: dict, upstream: np.ndarray, lib, functional, mode=None):
    """One forward + backward of the case with fresh leaves, as a no-argument call."""
    forward = _layer(case, lib, functional)

    def run():
        tensors = {name: lib.tensor(a, requires_grad=True) for name, a in arrays.items()}
        out = forward(tensors)
        out.backward(lib.tensor(upstream))

    if mode is None:
        return run

    def run_in_mode():
        with mg.kernels.mode(mode):
            run()

    return run_in_mode


def measure(case: Case, repeats: int) -> list:
    rng = np.random.default_rng(0)
    arrays = _inputs(case, rng)
    shape = _layer(case, mg, F)({n: mg.tensor(a) for n, a in arrays.items()}).shape
    upstream = rng.standard_normal(shape).astype(np.float32)
    contenders = {"fast": _step(case, arrays, upstream, mg, F)}
    has_twin = case.kind != "max_pool"  # pooling has one implementation
    if has_twin:
        contenders["twin"] = _step(case, arrays, upstream, mg, F, mode="numpy")
    if torch is not None:
        contenders["torch"] = _step(case, arrays, upstream, torch, torch.nn.functional)
    times = _block_medians(contenders, repeats)
    row = [case.name, _describe(case), f"{times['fast'] * 1e3:.2f}"]
    row += [f"{times['twin'] * 1e3:.2f}", f"{times['twin'] / times['fast']:.2f}"] if has_twin \
        else ["-", "-"]
    if torch is not None:
        row += [f"{times['torch'] * 1e3:.2f}", f"{times['fast'] / times['torch']:.2f}"]
    return row


def _block_medians(contenders: dict, repeats: int, rounds: int = 2) -> dict:
    """Median seconds per call of each contender, from `rounds` alternating blocks of
    about repeats / rounds calls, each block after one warm-up call."""
    per_block = max(1, -(-repeats // rounds))
    samples: dict = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, call in contenders.items():
            call()  # warm-up: this library's caches and heap
            for _ in range(per_block):
                started = time.perf_counter()
                call()
                samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in samples.items()}


def _describe(case: Case) -> str:
    x = f"{case.batch}x{case.channels}x{case.size}x{case.size}"
    if case.kind == "conv":
        return (f"{x}, {case.channels}->{case.out_channels}, {case.kernel}x{case.kernel}, "
                f"pad {case.padding}, stride {case.stride}")
    if case.kind == "max_pool":
        return f"{x}, {case.kernel}x{case.kernel}, pad {case.padding}, stride {case.stride}"
    return f"{x}, conv 1->6->16 5x5, max pool 2, linear 256->10"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="interleaved rounds")
    parser.add_argument("--case", action="append", choices=[c.name for c in CASES],
                        help="run only these cases (repeatable; default all)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    cases = [c for c in CASES if args.case is None or c.name in args.case]
    headers = ["case", "shapes (float32)", "minigrad ms", "twin ms", "twin/minigrad"]
    threads = int(os.environ["OPENBLAS_NUM_THREADS"])
    if torch is not None:
        torch.set_num_threads(threads)
        headers += [f"PyTorch {torch.__version__.split('+')[0]} ms", "minigrad/PyTorch"]
    print(f"threads: {threads} (OPENBLAS_NUM_THREADS for minigrad, torch.set_num_threads)")
    print_table(headers, [measure(case, args.repeats) for case in cases])


if __name__ == "__main__":
    main()
