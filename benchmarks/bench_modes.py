"""The three kernel modes against each other, forward and backward, through the public API.

    python -m benchmarks.bench_modes [--repeats 30] [--config small --config ...]

For every op that dispatches to a kernel (softmax, layer norm, cross-entropy, the Adam
update) and the matrix products (BLAS in every mode on the CPU: no Numba product beat it
here, so numba mode falls back to it too), at the shapes they have in the three training
configurations of bench_train.py, each case times a forward and a backward pass (or one
optimizer step) with MINIGRAD_KERNELS set to numpy (the twins), numba (every kernel) and
auto (the measured thresholds of minigrad/kernels/thresholds.py), the modes alternating
call by call. The table shows medians in microseconds and auto/numpy; a row whose auto
time exceeds numpy's by more than 5% is marked FAIL: auto mode must never be slower than
the twins it replaces. Two reference softmax shapes follow, (64, 128, 1000) and
(256, 20, 20), where numba mode must be at least 3x faster than numpy mode. One BLAS
thread (OPENBLAS_NUM_THREADS=1 unless set), as the kernels are single-threaded.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402
from benchmarks.bench_train import CONFIGS, Config, toy_translate_config  # noqa: E402
from benchmarks.timing import median_times, print_table  # noqa: E402

MODES = ("numpy", "numba", "auto")
FAIL_RATIO = 1.05
# softmax forward + backward on these shapes: numba mode must run it at least 3x faster
# than numpy mode (a long row of a vocabulary, and many short attention rows)
SOFTMAX_SHAPES = ((64, 128, 1000), (256, 20, 20))
SOFTMAX_SPEED_UP = 3.0


@dataclass
class Case:
    name: str
    shape: str
    run: object  # () -> None: forward and backward (or one optimizer step)
    same_code: bool = False  # every mode runs the same code (BLAS): differences are noise


def _leaf(rng, shape, scale=1.0) -> mg.Tensor:
    return mg.tensor((rng.standard_normal(shape) * scale).astype(np.float32),
                     requires_grad=True)


def _backward_case(name: str, shape: str, leaves: list, forward, same_code=False) -> Case:
    """forward(*leaves) -> output; backward with an upstream gradient of ones, made once
    (as a loss's gradient arrives: its making is not the op's time)."""
    upstream = []

    def run():
        for leaf in leaves:
            leaf.grad = None
        out = forward(*leaves)
        if not upstream:
            upstream.append(mg.ones(*out.shape))
        out.backward(upstream[0])
    return Case(name, shape, run, same_code)


def _heads(x: mg.Tensor, heads: int) -> mg.Tensor:
    """(b, L, d) -> (b, heads, L, d / heads), the model's strided view (no copy)."""
    batch, length, width = x.shape
    return x.reshape(batch, length, heads, width // heads).transpose(1, 2)


def cases(config: Config, seed: int = 0) -> list[Case]:
    rng = np.random.default_rng(seed)
    b, length, d, h, ff, vocab = (config.batch, config.length, config.d_model, config.nhead,
                                  config.ff, config.vocab)
    rows = b * length
    x = _leaf(rng, (b, length, d))
    q, k, v = (_leaf(rng, (b, length, d)) for _ in range(3))
    scores = _leaf(rng, (b, h, length, length), 3.0)
    weight, bias = _leaf(rng, (d,)), _leaf(rng, (d,))
    logits = _leaf(rng, (rows, vocab), 3.0)
    target = mg.tensor(rng.integers(0, vocab, rows))
    w_ff = _leaf(rng, (ff, d), 0.05)
    label = f"{config.name}: "
    found = [
        _backward_case("softmax (attention)", f"{label}{(b, h, length, length)}", [scores],
                       lambda s: s.softmax(-1)),
        _backward_case("layer_norm", f"{label}{(b, length, d)}", [x, weight, bias],
                       lambda t, w, c: F.layer_norm(t, (d,), w, c)),
        _backward_case("cross_entropy (smoothing 0.1)", f"{label}{(rows, vocab)}",
                       [logits], lambda z: F.cross_entropy(z, target, label_smoothing=0.1)),
        _backward_case("matmul q @ k^T", f"{label}{(b, h, length, d // h)} x keys", [q, k],
                       lambda a, c: _heads(a, h) @ _heads(c, h).transpose(-2, -1), True),
        _backward_case("matmul weights @ v", f"{label}{(b, h, length, length)} x values",
                       [scores, v], lambda s, c: s @ _heads(c, h), True),
        _backward_case("matmul x @ W^T (Linear)", f"{label}{(b, length, d)} x {(ff, d)}",
                       [x, w_ff], lambda t, w: t @ w.T, True),
    ]
    params = [_leaf(rng, (ff, d), 0.05), _leaf(rng, (d, ff), 0.05), _leaf(rng, (d,))]
    for p in params:
        p.grad = mg.tensor(rng.standard_normal(p.shape).astype(np.float32))
    optimizer = mg.optim.Adam(params, lr=1e-4)
    found.append(Case("Adam step", f"{label}{(ff, d)}, {(d, ff)}, {(d,)}", optimizer.step))
    return found


def softmax_cases(seed: int = 0) -> list[Case]:
    rng = np.random.default_rng(seed)
    return [_backward_case("softmax", f"reference: {shape}", [_leaf(rng, shape, 3.0)],
                           lambda s: s.softmax(-1)) for shape in SOFTMAX_SHAPES]


def _in_mode(mode: str, run):
    def call():
        with mg.kernels.mode(mode):
            run()
    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    configs = {"small": CONFIGS["small"], "toy_translate": toy_translate_config(),
               "paper-base": CONFIGS["paper-base"]}
    parser.add_argument("--config", action="append", choices=list(configs),
                        help="configs whose shapes to time (default: all)")
    args = parser.parse_args()
    rows, failures = [], 0
    chosen = [case for name in args.config or list(configs) for case in cases(configs[name])]
    for case in chosen + softmax_cases():
        times = median_times({mode: _in_mode(mode, case.run) for mode in MODES},
                             repeats=args.repeats, warmup=3)
        ratio, speed_up = times["auto"] / times["numpy"], times["numpy"] / times["numba"]
        verdict = "FAIL" if ratio > FAIL_RATIO else "ok"
        if case.same_code:
            verdict = "BLAS in every mode"
        elif case.shape.startswith("reference") and speed_up < SOFTMAX_SPEED_UP:
            verdict = f"FAIL: numba < {SOFTMAX_SPEED_UP:g}x numpy"
        failures += verdict.startswith("FAIL")
        rows.append([case.name, case.shape, *(f"{times[mode] * 1e6:,.0f}" for mode in MODES),
                     f"{speed_up:.2f}", f"{ratio:.2f}", verdict])
    print(f"forward + backward in each kernel mode, median of {args.repeats} alternating "
          f"calls, float32, OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    print_table(["op", "shape", "numpy us", "numba us", "auto us", "numba speed-up",
                 "auto/numpy", "auto"], rows)
    print(f"\n{failures} FAIL" if failures else "\nauto is never more than 5% slower than numpy, "
          f"and numba mode runs the reference softmax shapes at least {SOFTMAX_SPEED_UP:g}x "
          "faster than numpy mode")


if __name__ == "__main__":
    main()
