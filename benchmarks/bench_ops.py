"""Every op against PyTorch (CPU): forward, and forward+backward, at the shapes of real
programs.

    python -m benchmarks.bench_ops                     # every case, about 3 minutes
    python -m benchmarks.bench_ops --op pow --op gelu --repeats 30
    python -m benchmarks.bench_ops --size tiny --repeats 1      # every case on little work

The cases (bench_ops_cases.py) cover every entry of minigrad's method table and the main
nn.functional ops, each at up to three shapes: a (32, 16, 256) activation, a (512, 64)
matrix and a (64, 1000) block of logits (convolution and pooling: a (8, 64, 32, 32) image
batch), float32, with a natural second operand for binary ops and products. The forward
runs on tensors that do not require grad; forward+backward on leaves that do, with their
.grad reset each call (as a training step's zero_grad does), and a fixed upstream gradient.

Both frameworks run on one thread: OPENBLAS_NUM_THREADS=1 for NumPy's BLAS (set before
NumPy is imported), torch.set_num_threads(1). The calls alternate between the frameworks
(benchmarks/timing.py), each sample long enough to time (several calls of a fast op), and
the table reports medians from the one run and the ratio minigrad / PyTorch. Rows over 2x
in either column come first, worst first, with the reason in the "why" column: "per-op
overhead" when the op costs minigrad no more than four empty ops (the last line measures
one: neg of a 1-element tensor), else the explanation in WHY below.
"""
# ruff: noqa: E402  (the thread setting below must come before NumPy is imported)
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
import time
from types import SimpleNamespace

import numpy as np
import torch

import minigrad as mg
from benchmarks.bench_ops_cases import CASES, SHAPES, Case
from benchmarks.timing import median_times, print_table
from minigrad.ops import OPS

MG = SimpleNamespace(name="minigrad", lib=mg, F=mg.nn.functional)
TORCH = SimpleNamespace(name="PyTorch", lib=torch, F=torch.nn.functional)
OVER = 2.0  # the ratio that sends a row to the first table
OVERHEAD_MULTIPLE = 4  # an op costing at most this many empty ops is overhead-bound
SAMPLE_SECONDS = 5e-4  # the least time one sample should take: fast ops repeat inside it

# why a row stays over 2x, by op (or "op: call" for one of its cases), where the cause is
# not the per-op overhead the table detects itself; "NumPy's f" means NumPy's own f runs
# that much slower than PyTorch's on this input, measured alone
_IN_PLACE = "computed out of place, then copied in (ops/in_place.py)"
_NUMPY_REDUCTION = "NumPy's reduction over a short last axis (3-4x)"
_SLICES = "per-op overhead, once per slice it returns"
_INDEX = "index checks (range, shape) and advanced indexing with broadcast aranges"
_GEMM = ("one GEMM, OpenBLAS against MKL: alone 1.2x, but the ratio moves with what else "
         "the machine runs")
WHY: dict[str, str] = {
    "erf": ("a vector kernel in float64 (two polynomials and an exp per element), against "
            "PyTorch's float32 one"),
    "gelu: F.gelu(x)": "erf (see erf) and four NumPy passes around it; its backward eight more",
    "F.cross_entropy": ("512 rows of 64: the fused kernel alone is 1.4x PyTorch's log_softmax; "
                        "the id check, target weights and mean add about 15 us"),
    "fmod": "NumPy's fmod is a scalar libm loop (20x)",
    "remainder": "NumPy's remainder is a scalar libm loop",
    "hypot": "NumPy's hypot (3.5x)",
    "sign": "NumPy's sign (3.5x)",
    "flip": "NumPy's copy of a reversed view (3x)",
    "cumsum": "NumPy's cumsum, a serial loop (3.7x)",
    "cumprod": "NumPy's cumprod, a serial loop",
    "tril": "NumPy's tril: a mask from tri, then where (3.5x)",
    "triu": "NumPy's triu: a mask from tri, then where (3.5x)",
    "sum": _NUMPY_REDUCTION, "mean": _NUMPY_REDUCTION, "amax": _NUMPY_REDUCTION,
    "amin": _NUMPY_REDUCTION, "norm": _NUMPY_REDUCTION, "sum_to_size": _NUMPY_REDUCTION,
    "index_add": ("out of place: the rows summed into zeros (kernels/segment_sum.py), then "
                  "added to the input: two passes, one in PyTorch"),
    "index_add_": _IN_PLACE, "index_select": _INDEX, "F.embedding": _INDEX,
    "clamp_min_": _IN_PLACE, "clamp_max_": _IN_PLACE, "lerp_": _IN_PLACE,
    "scatter_": _IN_PLACE, "scatter_add_": _IN_PLACE, "index_fill_": _IN_PLACE,
    "masked_scatter_": _IN_PLACE,
    "unbind": _SLICES, "chunk": _SLICES, "split": _SLICES,
    "gather": _INDEX, "take": _INDEX, "take_along_dim": _INDEX, "scatter": _INDEX,
    "scatter_add": _INDEX,
    "lerp": "both formulas (from either end) and a where: five passes, one in PyTorch",
    "minimum": "three ops: -maximum(-a, -b)",
    "outer": "three ops: two unsqueezed views and a broadcast product",
    "sigmoid": "exp, abs, maximum, add and divide: five NumPy passes, one in PyTorch",
    "pow: x ** 3": "x * x * x: two passes, one in PyTorch",
    "pow: x ** -0.5": "NumPy's pow against PyTorch's rsqrt (4x)",
    "pow: x ** 2.7, mixed signs": "|x| ** p, then NaN where x < 0: four more passes",
    "multinomial": "an exponential race over every category: uniforms, log1p, argsort",
    "topk": "argpartition, then a sort of the k largest",
    "unique": "NumPy's unique sorts the whole input",
    "matmul": _GEMM, "mm": _GEMM, "F.linear": _GEMM,
    "F.conv2d": "im2col and one matmul against oneDNN's direct convolution (bench_conv)",
}

HEADERS = ["op", "call", "shape", "fwd minigrad us", "fwd PyTorch us", "fwd ratio",
           "f+b minigrad us", "f+b PyTorch us", "f+b ratio", "why"]


def _tensor(L, array: np.ndarray, requires_grad: bool):
    if array.dtype.kind == "f":
        return L.lib.tensor(array.astype(np.float32), requires_grad=requires_grad)
    return L.lib.tensor(array)


def _first(result):
    return result[0] if isinstance(result, (tuple, list)) else result


def _as_numpy(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _forward(case: Case, L, arrays: list):
    tensors = [_tensor(L, a, False) for a in arrays]
    return lambda: case.call(L, *tensors)


def _forward_backward(case: Case, L, arrays: list, grad: np.ndarray):
    tensors = [_tensor(L, a, True) for a in arrays]
    leaves = [t for t in tensors if t.requires_grad]
    upstream = L.lib.tensor(grad)

    def step():
        for leaf in leaves:
            leaf.grad = None
        _first(case.call(L, *tensors)).backward(upstream)

    return step


def _calls_per_sample(functions: dict) -> int:
    """Calls per timed sample: enough for the slowest framework's sample to last
    SAMPLE_SECONDS (after two warm-up calls each: Numba loads its kernels on the first)."""
    slowest = 0.0
    for fn in functions.values():
        fn()
        start = time.perf_counter()
        fn()
        slowest = max(slowest, time.perf_counter() - start)
    return max(1, min(200, int(SAMPLE_SECONDS / max(slowest, 1e-9))))


def _median_pair(functions: dict, repeats: int) -> dict:
    return median_times(functions, repeats, inner=_calls_per_sample(functions), warmup=1)


def same_result(case: Case, shape: tuple) -> bool:
    """Whether both frameworks compute the case alike (else its ratio would compare two
    different computations): the same shape, and values within 1e-3 unless random."""
    arrays = case.inputs(shape, np.random.default_rng(0))
    ours, theirs = (_as_numpy(_first(_forward(case, L, arrays)())) for L in (MG, TORCH))
    return ours.shape == theirs.shape and (
        case.random or np.allclose(ours, theirs, rtol=1e-3, atol=1e-3, equal_nan=True))


def measure(case: Case, shape: tuple, repeats: int) -> dict:
    """Median seconds of each framework's forward and forward+backward of the case."""
    arrays = case.inputs(shape, np.random.default_rng(0))
    times = {"fwd": _median_pair({L.name: _forward(case, L, arrays) for L in (MG, TORCH)},
                                 repeats)}
    out = _first(_forward(case, TORCH, arrays)())
    if case.backward and out.is_floating_point():
        grad = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(np.float32)
        steps = {L.name: _forward_backward(case, L, arrays, grad) for L in (MG, TORCH)}
        times["f+b"] = _median_pair(steps, repeats)
    return times


def empty_op_times(repeats: int) -> dict:
    """The fixed cost of one op in each framework: neg of a 1-element float32 tensor."""
    case = Case("neg", lambda L, x: -x, lambda s, r: [r.standard_normal(1)])
    return measure(case, (1,), repeats)


def _why(case: Case, times: dict, empty: dict) -> str:
    worst = max(times, key=lambda mode: _ratio(times[mode]))
    if _ratio(times[worst]) <= OVER:
        return ""
    if times[worst][MG.name] <= OVERHEAD_MULTIPLE * empty[worst][MG.name]:
        return "per-op overhead at this size"
    return WHY.get(f"{case.op}: {case.label}", WHY.get(case.op, "not yet explained"))


def _ratio(pair: dict) -> float:
    return pair[MG.name] / pair[TORCH.name]


def table_row(case: Case, shape: tuple, times: dict, empty: dict) -> list:
    cells = [case.op, case.label, "x".join(map(str, shape))]
    for mode in ("fwd", "f+b"):
        if mode in times:
            pair = times[mode]
            cells += [f"{pair[MG.name] * 1e6:.1f}", f"{pair[TORCH.name] * 1e6:.1f}",
                      f"{_ratio(pair):.2f}"]
        else:
            cells += ["-", "-", "-"]
    return cells + [_why(case, times, empty)]


def aliases(cases: list) -> dict:
    """Each OPS name whose function another name serves, mapped to that name: the one the
    cases time, else the first in the table."""
    timed = {case.op for case in cases}
    names_of: dict = {}
    for name, (function, _) in OPS.items():
        names_of.setdefault(id(function), []).append(name)
    found = {}
    for names in names_of.values():
        chosen = next((name for name in names if name in timed), names[0])
        found.update({name: chosen for name in names if name != chosen})
    return found


def uncovered(cases: list) -> list:
    """OPS names that no case times, directly or through an alias."""
    timed = {case.op for case in cases}
    alias_of = aliases(cases)
    return [name for name in OPS if name not in timed and alias_of.get(name) not in timed]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="timed samples per median")
    parser.add_argument("--op", action="append", help="only these ops (OPS or F.<name>)")
    parser.add_argument("--size", default="full", choices=list(SHAPES))
    args = parser.parse_args()
    torch.set_num_threads(1)
    cases = [c for c in CASES if not args.op or c.op in args.op]
    shapes = SHAPES[args.size]
    empty = empty_op_times(args.repeats)
    over, within, differ = [], [], []
    for case in cases:
        for shape_name in case.shapes:
            if not same_result(case, shapes[shape_name]):
                differ.append(f"{case.op} {case.label}".strip() + f" at {shape_name}")
            times = measure(case, shapes[shape_name], args.repeats)
            row = table_row(case, shapes[shape_name], times, empty)
            worst = max(_ratio(pair) for pair in times.values())
            (over if worst > OVER else within).append((worst, row))
        print(f"[{case.op} {case.label}] done", file=sys.stderr)
    print(f"minigrad / PyTorch, medians of {args.repeats} samples, one thread each "
          f"(PyTorch {torch.__version__}, NumPy {np.__version__})\n")
    print(f"Over {OVER:g}x in either column, worst first:\n")
    print_table(HEADERS, [row for _, row in sorted(over, key=lambda item: -item[0])])
    print(f"\nWithin {OVER:g}x:\n")
    print_table(HEADERS, [row for _, row in within])
    mg_empty, torch_empty = (
        " / ".join(f"{empty[mode][L.name] * 1e6:.1f}" for mode in ("fwd", "f+b"))
        for L in (MG, TORCH))
    print(f"\nAn empty op (neg of a 1-element tensor), forward / forward+backward: "
          f"minigrad {mg_empty} us, PyTorch {torch_empty} us.")
    alias_of = aliases(CASES)
    print("Aliases, timed in their op's rows: "
          + ", ".join(f"{name} = {alias_of[name]}" for name in sorted(alias_of)) + ".")
    missing = uncovered(CASES)
    if missing:
        print(f"Ops of the method table without a case: {', '.join(missing)}.")
    if differ:
        print(f"Cases whose results differ between the frameworks: {', '.join(differ)}.")


if __name__ == "__main__":
    main()
