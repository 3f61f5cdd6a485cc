"""Benchmark nn.LSTM and nn.GRU, forward + backward, against PyTorch CPU at the size of
PyTorch's word_language_model example (its defaults: emsize 200, nhid 200, 2 layers,
bptt 35, batch 20, dropout 0.2 between the layers).

    python -m benchmarks.bench_rnn [--repeats 20] [--mode LSTM --mode GRU] [--bptt 35]
    OPENBLAS_NUM_THREADS=2 python -m benchmarks.bench_rnn    # both libraries on 2 threads

Each call runs `output, h_n = rnn(x, h_0); output.backward(g)` in training mode, float32,
x (bptt, batch, emsize) requiring grad and h_0 given (the example carries the state over
from the previous batch). Both libraries get the same number of threads:
OPENBLAS_NUM_THREADS (default 1) for minigrad's BLAS, torch.set_num_threads for PyTorch.
Calls alternate between the libraries in each round, so load from other processes hits
both alike; the table shows the medians and their ratio from the one run.
"""
# ruff: noqa: E402  (the thread setting below must come before NumPy is imported)
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg
from benchmarks.timing import median_times, print_table

try:
    import torch
except ImportError:
    torch = None

EMSIZE, NHID, NLAYERS, BATCH, DROPOUT = 200, 200, 2, 20, 0.2
MODES = ("LSTM", "GRU")


def _arrays(mode: str, bptt: int, rng) -> dict:
    """float32 input, initial states and upstream gradient for one call."""
    states = 2 if mode == "LSTM" else 1
    return {
        "x": rng.standard_normal((bptt, BATCH, EMSIZE)).astype(np.float32),
        "states": [rng.standard_normal((NLAYERS, BATCH, NHID)).astype(np.float32) * 0.1
                   for _ in range(states)],
        "upstream": rng.standard_normal((bptt, BATCH, NHID)).astype(np.float32),
    }


def _step(lib, rnn, arrays: dict):
    """One forward + backward through `rnn` with a fresh input leaf, as a no-argument
    call (for minigrad or PyTorch: the calls are spelled alike)."""
    states = [lib.tensor(s) for s in arrays["states"]]
    hx = tuple(states) if len(states) == 2 else states[0]
    upstream = lib.tensor(arrays["upstream"])

    def run():
        x = lib.tensor(arrays["x"], requires_grad=True)
        output, _ = rnn(x, hx)
        output.backward(upstream)

    return run


def measure(mode: str, bptt: int, repeats: int) -> list:
    arrays = _arrays(mode, bptt, np.random.default_rng(0))
    mg.manual_seed(0)
    contenders = {"minigrad": _step(mg, getattr(mg.nn, mode)(EMSIZE, NHID, NLAYERS,
                                                              dropout=DROPOUT), arrays)}
    if torch is not None:
        torch.manual_seed(0)
        contenders["torch"] = _step(torch, getattr(torch.nn, mode)(EMSIZE, NHID, NLAYERS,
                                                                   dropout=DROPOUT), arrays)
    times = median_times(contenders, repeats=repeats, warmup=2)
    row = [mode, f"{bptt}x{BATCH}x{EMSIZE}, {NLAYERS} layers of {NHID}",
           f"{times['minigrad'] * 1e3:.1f}"]
    if torch is not None:
        row += [f"{times['torch'] * 1e3:.1f}", f"{times['minigrad'] / times['torch']:.2f}"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="interleaved rounds")
    parser.add_argument("--mode", action="append", choices=MODES,
                        help="modules to run (repeatable; default both)")
    parser.add_argument("--bptt", type=int, default=35, help="sequence length")
    args = parser.parse_args()
    if args.repeats < 1 or args.bptt < 1:
        parser.error("--repeats and --bptt must be at least 1")
    headers = ["module", "input, layers (float32)", "minigrad ms"]
    threads = int(os.environ["OPENBLAS_NUM_THREADS"])
    if torch is not None:
        torch.set_num_threads(threads)
        headers += [f"PyTorch {torch.__version__.split('+')[0]} ms", "minigrad/PyTorch"]
    print(f"threads: {threads} (OPENBLAS_NUM_THREADS for minigrad, torch.set_num_threads); "
          "forward + backward, training mode")
    print_table(headers, [measure(mode, args.bptt, args.repeats)
                          for mode in args.mode or MODES])


if __name__ == "__main__":
    main()
