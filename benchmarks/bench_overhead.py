"""Per-op overhead on tiny tensors: minigrad vs PyTorch (CPU, if installed) vs raw NumPy.

    python -m benchmarks.bench_overhead

Each case runs the same computation on (16,)-shaped float32 tensors, where the arithmetic
is negligible and the time is the framework's bookkeeping: tensor creation, dtype and
shape checks, graph recording, the backward walk.
"""
from __future__ import annotations

import argparse

import numpy as np

import minigrad as mg
from benchmarks.timing import median_times, print_table

SHAPE = (16,)


def numpy_cases(rng):
    a, b, g = (rng.standard_normal(SHAPE).astype(np.float32) for _ in range(3))

    def add_mul_forward():
        return (a + b) * b

    def add_mul_forward_backward():
        s = a + b
        out = s * b
        grad_s = g * b
        return out, grad_s, g * s + grad_s  # d/da, d/db

    def linear_relu_forward_backward():
        w = b[:4, None] * a[None, :]  # (4, 16)
        h = w @ a
        out = np.maximum(h, 0)
        grad_h = (out > 0) * 1.0
        return out, np.outer(grad_h, a), w.T @ grad_h

    return {
        "add+mul forward (no grad)": add_mul_forward,
        "add+mul forward+backward": add_mul_forward_backward,
        "matvec+relu+sum forward+backward": linear_relu_forward_backward,
    }


def framework_cases(lib, rng):
    """The same cases written once against the shared torch/minigrad API."""
    make = lambda *s: lib.tensor(rng.standard_normal(s).astype(np.float32))  # noqa: E731
    a, b, g = make(*SHAPE), make(*SHAPE), make(*SHAPE)
    a_leaf, b_leaf = make(*SHAPE).requires_grad_(), make(*SHAPE).requires_grad_()
    w_leaf = make(4, 16).requires_grad_()

    def add_mul_forward():
        with lib.no_grad():
            return (a + b) * b

    def add_mul_forward_backward():
        a_leaf.grad = b_leaf.grad = None
        ((a_leaf + b_leaf) * b_leaf).backward(g)

    def linear_relu_forward_backward():
        w_leaf.grad = a_leaf.grad = None
        (w_leaf @ a_leaf).relu().sum().backward()

    return {
        "add+mul forward (no grad)": add_mul_forward,
        "add+mul forward+backward": add_mul_forward_backward,
        "matvec+relu+sum forward+backward": linear_relu_forward_backward,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    contenders = {"numpy": numpy_cases(rng), "minigrad": framework_cases(mg, rng)}
    try:
        import torch

        torch.set_num_threads(1)
        contenders["torch"] = framework_cases(torch, rng)
    except ImportError:
        print("(PyTorch not installed: its column is left out)")
    rows = []
    for case in contenders["numpy"]:
        timings = median_times({name: c[case] for name, c in contenders.items()},
                               repeats=args.repeats)
        row = [case] + [f"{timings[name] * 1e6:.1f}" for name in contenders]
        if "torch" in timings:
            row.append(f"{timings['minigrad'] / timings['torch']:.2f}")
        rows.append(row)
    headers = ["case (shape (16,), float32)"] + [f"{n} us" for n in contenders]
    if "torch" in contenders:
        headers.append("minigrad/torch")
    print_table(headers, rows)


if __name__ == "__main__":
    main()
