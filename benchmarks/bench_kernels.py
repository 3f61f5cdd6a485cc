"""Benchmark the Numba kernels against their NumPy reference twins and PyTorch CPU.

    python benchmarks/bench_kernels.py [--repeats 30]

For every kernel and shape: median wall time of the reference twin (mode "numpy"), the
Numba kernel through its dispatcher (mode "numba"), PyTorch CPU when importable (default
thread count), speed-ups, the path "auto" mode picks, and throughput (GB/s of array
traffic). Implementations
are interleaved within each repeat so load from other processes hits them alike. Then
first-call compile time (fresh process, empty NUMBA_CACHE_DIR) and cached start-up time
(second fresh process, same cache dir).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad.kernels as kernels  # noqa: E402
from minigrad.kernels import dispatch  # noqa: E402
from minigrad.kernels.cross_entropy import cross_entropy_twin  # noqa: E402
from minigrad.kernels.layer_norm import layer_norm_twin  # noqa: E402
from minigrad.kernels.softmax import log_softmax_twin, softmax_twin  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def _median_times(functions, repeats):
    """Median seconds of each function, calls interleaved across repeats."""
    times = [[] for _ in functions]
    for function in functions:
        function()  # warm-up: compile, page in
    for _ in range(repeats):
        for slot, function in enumerate(functions):
            start = time.perf_counter()
            function()
            times[slot].append(time.perf_counter() - start)
    return [float(np.median(t)) for t in times]


def _in_mode(name, function, *args):
    def call():
        with kernels.mode(name):
            return function(*args)

    return call


def _auto_path(function, args):
    """Which implementation "auto" mode takes for these arguments: "numba" when the
    dispatcher loads its Numba kernels, else "numpy" (the twin)."""
    loader = dispatch.cpu_kernels
    calls = []

    def recording_loader(name):
        calls.append(name)
        return loader(name)

    dispatch.cpu_kernels = recording_loader
    try:
        with kernels.mode("auto"):
            function(*args)
    finally:
        dispatch.cpu_kernels = loader
    return "numba" if calls else "numpy"


def _softmax_cases(rng):
    cases = []
    for shape in [(256, 20, 20), (64, 128, 1000), (8, 10)]:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(shape).astype(dtype) * 3
            g = rng.standard_normal(shape).astype(dtype)
            y, z = softmax_twin(x), log_softmax_twin(x)
            nbytes = x.nbytes
            cases += [
                ("softmax fwd", shape, dtype, kernels.softmax, (x,), 2 * nbytes),
                ("softmax bwd", shape, dtype, kernels.softmax_backward, (y, g), 3 * nbytes),
                ("log_softmax fwd", shape, dtype, kernels.log_softmax, (x,), 2 * nbytes),
                ("log_softmax bwd", shape, dtype, kernels.log_softmax_backward, (z, g), 3 * nbytes),
            ]
    return cases


def _torch_softmax(name, args):
    tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in args]
    dtype = tensors[0].dtype
    aten = torch.ops.aten
    return {
        "softmax fwd": lambda: torch.softmax(tensors[0], -1),
        "softmax bwd": lambda: aten._softmax_backward_data(tensors[1], tensors[0], -1, dtype),
        "log_softmax fwd": lambda: torch.log_softmax(tensors[0], -1),
        "log_softmax bwd": lambda: aten._log_softmax_backward_data(
            tensors[1], tensors[0], -1, dtype
        ),
    }[name]


def _layer_norm_cases(rng):
    cases = []
    for shape in [(1024, 128), (1024, 512)]:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(shape).astype(dtype) * 3 + 1
            g = rng.standard_normal(shape).astype(dtype)
            weight = rng.standard_normal(shape[-1:]).astype(dtype)
            bias = rng.standard_normal(shape[-1:]).astype(dtype)
            _, mean, rstd = layer_norm_twin(x, weight, bias, 1, 1e-5)
            cases += [
                ("layer_norm fwd", shape, dtype, kernels.layer_norm, (x, weight, bias, 1, 1e-5),
                 2 * x.nbytes),
                ("layer_norm bwd", shape, dtype, kernels.layer_norm_backward,
                 (g, x, mean, rstd, weight, 1), 3 * x.nbytes),
            ]
    return cases


def _cross_entropy_cases(rng):
    """The loss of a training step: 1000 classes, ignore_index rows, label smoothing 0.1."""
    cases = []
    shape = (1024, 1000)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(shape).astype(dtype) * 3
        target = rng.integers(0, shape[1], shape[0])
        valid = rng.random(shape[0]) > 0.1
        rows = (valid, np.where(valid, target, 0), valid.astype(dtype), None, 0.1)
        _, logp = cross_entropy_twin(x, *rows)
        scale = np.asarray(1 / valid.sum(), dtype)
        cases += [
            ("cross_entropy fwd", shape, dtype, kernels.cross_entropy, (x, *rows), 2 * x.nbytes),
            ("cross_entropy bwd", shape, dtype, kernels.cross_entropy_backward,
             (logp, *rows, scale), 2 * x.nbytes),
        ]
    return cases


def _torch_call(name, function, args):
    """The PyTorch CPU counterpart of a row, or None (no torch, or no single aten op:
    layer norm and cross-entropy rows are compared with the twin only)."""
    if torch is None:
        return None
    if "softmax" in name:
        return _torch_softmax(name, args)
    return None


def run_table(repeats, only=""):
    rng = np.random.default_rng(0)
    header = "| kernel | shape | dtype | reference ms | numba ms | torch ms | ref/numba"
    header += " | torch/numba | auto picks | numba throughput |"
    print(header)
    print("|" + "---|" * 10)
    cases = _softmax_cases(rng) + _layer_norm_cases(rng) + _cross_entropy_cases(rng)
    for name, shape, dtype, function, args, work in cases:
        if only not in name:
            continue
        functions = [_in_mode("numpy", function, *args), _in_mode("numba", function, *args)]
        torch_call = _torch_call(name, function, args)
        if torch_call is not None:
            functions.append(torch_call)
        times = _median_times(functions, repeats)
        ref, numba = times[0], times[1]
        torch_ms = f"{times[2] * 1e3:.3f}" if torch_call is not None else "-"
        torch_ratio = f"{times[2] / numba:.2f}" if torch_call is not None else "-"
        throughput = f"{work / numba / 1e9:.1f} GB/s"
        row = [name, str(shape), np.dtype(dtype).name, f"{ref * 1e3:.3f}", f"{numba * 1e3:.3f}"]
        row += [torch_ms, f"{ref / numba:.2f}", torch_ratio, _auto_path(function, args)]
        print("| " + " | ".join(row + [throughput]) + " |", flush=True)


_STARTUP = """
import time
start = time.perf_counter()
import numpy as np
import minigrad.kernels as k
imported = time.perf_counter()
x = np.ones((4, 8), np.float32)
with k.mode("numba"):
    k.softmax(x); k.softmax_backward(x, x); k.log_softmax(x); k.log_softmax_backward(x, x)
    k.adam_update(x.copy(), x, x.copy(), x * x, None, 1, 1e-3, 0.9, 0.999, 1e-8, 0.0, False)
    y, mean, rstd = k.layer_norm(x, x[0], x[0], 1, 1e-5)
    k.layer_norm_backward(x, x, mean, rstd, x[0], 1)
    rows = (np.ones(4, bool), np.zeros(4, np.int64), np.ones(4, np.float32), None, 0.1)
    losses, logp = k.cross_entropy(x, *rows)
    k.cross_entropy_backward(logp, *rows, np.float32(1))
done = time.perf_counter()
print(f"{imported - start:.3f} {done - imported:.3f}")
"""


def run_startup():
    root = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": root}
        for label in ("first call, empty cache", "cached start-up"):
            out = subprocess.run(
                [sys.executable, "-c", _STARTUP], env=env, capture_output=True, text=True
            )
            imported, first_calls = out.stdout.split()
            print(
                f"{label}: import minigrad.kernels {imported} s, first call of every "
                f"float32 kernel {first_calls} s"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--only", default="", help="run only kernels whose name has this")
    parser.add_argument("--no-startup", action="store_true", help="skip the compile timing")
    args = parser.parse_args()
    if not args.no_startup:
        run_startup()
    run_table(args.repeats, args.only)


if __name__ == "__main__":
    main()
