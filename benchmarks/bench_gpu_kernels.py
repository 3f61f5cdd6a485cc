"""GPU kernels against their twins: the numba.cuda softmax kernels vs the CuPy reference
code, and the tiled Numba matmul vs cuBLAS (cupy.matmul). Times are medians per call,
synchronised, so launch overhead counts as it does in training.

    PYTHONPATH=. python -m benchmarks.bench_gpu_kernels
    PYTHONPATH=. python -m benchmarks.bench_gpu_kernels --quick   # tiny shapes, 2 repeats

The "auto" kernel mode sends CuPy arrays to a Numba kernel only where this table shows
it faster (minigrad/kernels/cuda/__init__.py); today that is nowhere by default.
`--quick` is for rehearsing benchmarks/gpu_check.sh on the CuPy stand-in, where the
kernels run in Numba's CUDA simulator: its times mean nothing.
"""
from __future__ import annotations

import argparse
import importlib

import numpy as np

from benchmarks.timing import median_times, print_table

# (rows, row length): attention scores of the toy model, logits, a long row
ROW_SHAPES = [(64 * 4 * 16, 16), (64 * 16, 1000), (4096, 4096)]
# (m, k, n): a projection of the toy model's batch, a square product
MATMUL_SHAPES = [(64 * 16, 128, 512), (1024, 1024, 1024)]
QUICK_ROW_SHAPES = [(4, 16)]
QUICK_MATMUL_SHAPES = [(16, 16, 16)]


def _synced(cupy, fn, *args):
    def call():
        fn(*args)
        cupy.cuda.Device().synchronize()

    return call


def _row_rows(cupy, gpu_kernels, twins, shapes, repeats: int) -> list:
    rows = []
    rng = cupy.random.default_rng(0)
    for shape in shapes:
        x = rng.standard_normal(shape, dtype=np.float32)
        g = rng.standard_normal(shape, dtype=np.float32)
        y = twins.softmax_twin(x)
        for name, args in (("softmax", (x,)), ("log_softmax", (x,)),
                           ("softmax_backward", (y, g))):
            times = median_times({
                "twin": _synced(cupy, getattr(twins, f"{name}_twin"), *args),
                "kernel": _synced(cupy, getattr(gpu_kernels, name), *args),
            }, repeats=repeats, warmup=min(repeats, 3))
            rows.append(_row(f"{name} {shape}", times["twin"], times["kernel"]))
    return rows


def _matmul_rows(cupy, gpu_kernels, shapes, repeats: int) -> list:
    rows = []
    rng = cupy.random.default_rng(1)
    for m, k, n in shapes:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        times = median_times({
            "cublas": _synced(cupy, cupy.matmul, a, b),
            "kernel": _synced(cupy, gpu_kernels.matmul, a, b),
        }, repeats=repeats, warmup=min(repeats, 3))
        rows.append(_row(f"matmul {(m, k, n)}", times["cublas"], times["kernel"]))
    return rows


def _row(case: str, baseline: float, kernel: float) -> list:
    return [case, f"{baseline * 1e6:.1f}", f"{kernel * 1e6:.1f}", f"{baseline / kernel:.2f}x"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 2 repeats")
    args = parser.parse_args()
    import minigrad as mg
    from minigrad.kernels import cuda as gpu_kernels
    twins = importlib.import_module("minigrad.kernels.softmax")  # the module, not the function

    if not mg.cuda.is_available():
        raise SystemExit(f"bench_gpu_kernels: no GPU: {mg.cuda.unavailable_reason()}")
    cupy = mg.backend.cupy_or_none()
    print(f"GPU kernels vs twins on {mg.cuda.get_device_name()} (float32, us per call)")
    if args.quick:
        rows = (_row_rows(cupy, gpu_kernels, twins, QUICK_ROW_SHAPES, repeats=2)
                + _matmul_rows(cupy, gpu_kernels, QUICK_MATMUL_SHAPES, repeats=2))
    else:
        rows = (_row_rows(cupy, gpu_kernels, twins, ROW_SHAPES, repeats=30)
                + _matmul_rows(cupy, gpu_kernels, MATMUL_SHAPES, repeats=20))
    print_table(["case", "twin/cuBLAS us", "Numba kernel us", "kernel speed-up"], rows)


if __name__ == "__main__":
    main()
