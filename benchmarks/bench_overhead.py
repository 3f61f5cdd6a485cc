"""Per-op overhead on tiny tensors: minigrad vs PyTorch (CPU, if installed) vs raw NumPy.

    python -m benchmarks.bench_overhead [--repeats 3000] [--block 50]

Each case runs the same computation on (16,)-shaped float32 tensors (and (4, 16) and
(4, 4) matrices), where the arithmetic is negligible and the time is the framework's bookkeeping:
tensor creation, dtype and shape checks, graph recording, the backward walk. NumPy's
column is the same arithmetic written by hand, gradients included.

Two tables: calls alternating between the frameworks one by one (each call starts with
caches the other framework has just used: the pessimistic figure), and in blocks of
`--block` calls (the steady state of a loop). Both report the median per call.
"""
from __future__ import annotations

import argparse

import numpy as np

import minigrad as mg
from benchmarks.timing import median_times, print_table

SHAPE = (16,)
ACCUMULATING = "((p+q)*q).sum() backward, (4,4), .grad accumulating"


def inputs(seed: int = 0) -> dict:
    """The arrays every framework's cases start from."""
    rng = np.random.default_rng(seed)
    shapes = {"a": SHAPE, "b": SHAPE, "g": SHAPE, "w": (4,) + SHAPE, "p": (4, 4), "q": (4, 4)}
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}


def numpy_cases(arrays: dict) -> dict:
    a, b, g, w, p, q = (arrays[name] for name in "abgwpq")
    grad_p, grad_q = np.zeros_like(p), np.zeros_like(q)

    def add_mul_forward():
        return (a + b) * b

    def add_mul_forward_backward():
        s = a + b
        grad_s = g * b
        return s * b, grad_s, g * s + grad_s  # out, d/da, d/db

    def matvec_relu_sum_forward_backward():
        h = w @ a
        grad_h = (h > 0).astype(np.float32)
        return np.maximum(h, 0).sum(), np.outer(grad_h, a), grad_h @ w  # out, d/dw, d/da

    def accumulating_backward():
        s = p + q
        np.add(grad_p, q, out=grad_p)  # the leaves' gradients accumulate call to call
        np.add(grad_q, s + q, out=grad_q)
        return (s * q).sum(), grad_p, grad_q

    return {
        "add+mul forward (no grad)": add_mul_forward,
        "add+mul forward+backward": add_mul_forward_backward,
        "matvec+relu+sum forward+backward": matvec_relu_sum_forward_backward,
        ACCUMULATING: accumulating_backward,
    }


def framework_cases(lib, arrays: dict) -> dict:
    """The same cases written once against the shared torch/minigrad API; each returns
    what NumPy's twin returns."""
    a, b, g = (lib.tensor(arrays[name]) for name in "abg")
    a_leaf, b_leaf, w_leaf, p, q = (lib.tensor(arrays[name]).requires_grad_() for name in "abwpq")

    def add_mul_forward():
        with lib.no_grad():
            return (a + b) * b

    def add_mul_forward_backward():
        a_leaf.grad = b_leaf.grad = None
        out = (a_leaf + b_leaf) * b_leaf
        out.backward(g)
        return out, a_leaf.grad, b_leaf.grad

    def matvec_relu_sum_forward_backward():
        w_leaf.grad = a_leaf.grad = None
        out = (w_leaf @ a_leaf).relu().sum()
        out.backward()
        return out, w_leaf.grad, a_leaf.grad

    def accumulating_backward():
        out = ((p + q) * q).sum()
        out.backward()
        return out, p.grad, q.grad

    return {
        "add+mul forward (no grad)": add_mul_forward,
        "add+mul forward+backward": add_mul_forward_backward,
        "matvec+relu+sum forward+backward": matvec_relu_sum_forward_backward,
        ACCUMULATING: accumulating_backward,
    }


def contenders() -> dict:
    found = {"numpy": numpy_cases(inputs()), "minigrad": framework_cases(mg, inputs())}
    try:
        import torch

        torch.set_num_threads(1)
        found["torch"] = framework_cases(torch, inputs())
    except ImportError:
        print("(PyTorch not installed: its column is left out)")
    return found


def table(found: dict, repeats: int, block: int) -> None:
    rows = []
    for case in found["numpy"]:
        timings = median_times({name: cases[case] for name, cases in found.items()},
                               repeats=repeats, inner=block)
        row = [case] + [f"{timings[name] * 1e6:.1f}" for name in found]
        if "torch" in timings:
            row.append(f"{timings['minigrad'] / timings['torch']:.2f}")
        rows.append(row)
    headers = ["case (shape (16,), float32)"] + [f"{name} us" for name in found]
    if "torch" in found:
        headers.append("minigrad/torch")
    print_table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000, help="alternating rounds")
    parser.add_argument("--block", type=int, default=50, help="calls per block")
    args = parser.parse_args()
    found = contenders()
    print("Alternating every call (median of", args.repeats, "rounds):")
    table(found, args.repeats, 1)
    print(f"\nIn blocks of {args.block} calls (median of {max(args.repeats // args.block, 20)} "
          "rounds):")
    table(found, max(args.repeats // args.block, 20), args.block)


if __name__ == "__main__":
    main()
