"""mg.compile against eager minigrad and eager PyTorch (CPU), in one table.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_compile [--repeats 30] [--quick]

Rows (median time per call, calls of the contenders interleaved; ratios from the same
medians):
- the tiny accumulating graph of bench_overhead.py, ((p+q)*q).sum() backward on (4, 4)
  leaves whose .grad accumulates: per-op overhead, where compiling pays most;
- a character-level GPT training step (4 layers, 4 heads, width 64, context 16, batch
  32; forward, backward, AdamW step, zero_grad), the whole step compiled, and the same
  step of a minGPT-style GPT of that size (mingpt_style.py);
- a training step of `python -m train.toy_translate`'s Transformer at its CPU defaults,
  on one batch shape (the model compiled, backward through its node), with the C
  allocator's defaults and then with the heap setting the command makes before it
  trains (train/heap.py: freed memory kept for the next step, no page faults);
- the capture: the first call of the compiled GPT step (run, roll back, replay, compare)
  against one eager step, in this process once the kernels are loaded;
- the first toy_translate step in a new process, eager and compiled, with the kernel cache
  warm and cold (an empty NUMBA_CACHE_DIR: every Numba kernel compiles).
PyTorch runs on one thread, and on its default thread count (a column of its own when
that is more than one). Everything is compiled with fullgraph=True: a step that would run
eagerly fails the script. --quick runs every row on little work (a smaller GPT) and
leaves out the cold cache, for the tests. One BLAS thread for minigrad: on a busy machine
a second one mostly waits.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import minigrad as mg
import minigrad.nn.functional as F
from benchmarks.bench_overhead import ACCUMULATING, framework_cases, inputs
from benchmarks.mingpt_style import mingpt_class
from benchmarks.timing import median_times, print_table
from train.char_lm_model import ModelConfig, char_lm_class
from train.checkpoint import new_train_state
from train.config import DEFAULTS
from train.data import make_dataset
from train.heap import keep_freed_memory
from train.loop import make_batch

GPT = dict(layers=4, heads=4, embedding=64, context=16, batch=32, vocab=65)
QUICK_GPT = dict(layers=1, heads=2, embedding=16, context=8, batch=4, vocab=17)


def gpt_step(library, sizes: dict, seed: int = 0, style: str = "char_lm"):
    """One training step of a GPT of `library` (minigrad or torch), from the same
    initial weights, as a function of no arguments (the batch is fixed). `style`:
    "char_lm" (train.char_lm_model's Transformer) or "mingpt" (mingpt_style.py)."""
    model = _gpt(mg, sizes, seed, style)
    if library is not mg:
        weights = model.state_dict()
        model = _gpt(library, sizes, seed, style)
        model.load_state_dict({k: library.tensor(v.array) for k, v in weights.items()})
    optimizer = library.optim.AdamW(model.parameters(), lr=1e-3)
    ids = np.random.default_rng(seed).integers(0, sizes["vocab"],
                                              (sizes["batch"], sizes["context"] + 1))
    x, y = library.tensor(ids[:, :-1]), library.tensor(ids[:, 1:])
    cross_entropy = library.nn.functional.cross_entropy

    def step():
        optimizer.zero_grad()
        logits = model(x)
        if style == "char_lm":
            logits, _ = logits  # (logits, recurrent state)
        loss = cross_entropy(logits.reshape(-1, sizes["vocab"]), y.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    return step


def _gpt(library, sizes: dict, seed: int, style: str):
    library.manual_seed(seed)
    if style == "mingpt":
        return mingpt_class(library)(sizes["vocab"], sizes["embedding"], sizes["heads"],
                                     sizes["layers"], sizes["context"], dropout=0.1)
    config = ModelConfig(kind="transformer", vocab_size=sizes["vocab"],
                         embedding=sizes["embedding"], hidden=sizes["embedding"],
                         layers=sizes["layers"], heads=sizes["heads"],
                         feedforward=4 * sizes["embedding"], context=sizes["context"],
                         dropout=0.1, tie_weights=True)
    return char_lm_class(library)(config)


def translate_step(quick: bool):
    """A training step of train.toy_translate's Transformer (CPU defaults) on one batch,
    eager and with the model compiled."""
    config = DEFAULTS
    data = make_dataset(seed=config.seed, n_train=min(config.train_size, 2000))
    src, tgt = make_batch(data.encode(data.train[: (8 if quick else config.batch_size)]))
    steps = {}
    for name in ("eager", "compiled"):
        state = new_train_state(config, data.src_vocab, data.tgt_vocab, "cpu")
        forward = (mg.compile(state.model, fullgraph=True) if name == "compiled"
                   else state.model)
        source, target_in = mg.tensor(src), mg.tensor(tgt[:, :-1])
        target_out = mg.tensor(tgt[:, 1:].reshape(-1))

        def step(forward=forward, state=state, source=source, target_in=target_in,
                 target_out=target_out):
            state.optimizer.zero_grad()
            logits = forward(source, target_in)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target_out,
                                   ignore_index=0, label_smoothing=config.label_smoothing)
            loss.backward()
            state.optimizer.step()
            state.scheduler.step()
            return loss

        step.forward = forward  # the model it calls, compiled or not (profile_plan.py)
        steps[name] = step
    return steps["eager"], steps["compiled"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="interleaved rounds")
    parser.add_argument("--quick", action="store_true", help="little work (for tests)")
    parser.add_argument("--first-step", choices=("eager", "compiled"),
                        help=argparse.SUPPRESS)  # a child process timing one first step
    args = parser.parse_args()
    if args.first_step:
        print(json.dumps(_first_translate_step(args.first_step, args.quick)))
        return
    torch, threads = _torch_on_one_thread()
    sizes = QUICK_GPT if args.quick else GPT
    rows = []

    tiny = {"eager": framework_cases(mg, inputs())[ACCUMULATING],
            "compiled": mg.compile(framework_cases(mg, inputs())[ACCUMULATING],
                                   fullgraph=True)}
    if torch is not None:
        tiny.update(_torch_contenders(torch, threads,
                                      framework_cases(torch, inputs())[ACCUMULATING]))
    rows.append(_row("tiny graph, " + ACCUMULATING, 1e6, "us",
                     median_times(tiny, repeats=args.repeats * 20, inner=10)))

    size_text = ("{layers} layers x {heads} heads, width {embedding}, context {context}, "
                 "batch {batch}").format(**sizes)
    capture_seconds = {}
    gpt_times = {}
    for style, name in (("char_lm", "GPT step"), ("mingpt", "minGPT-style step")):
        eager = gpt_step(mg, sizes, style=style)
        eager()  # loads the Numba kernels, which the capture would be charged for otherwise
        compiled = mg.compile(gpt_step(mg, sizes, style=style), fullgraph=True)
        started = time.perf_counter()
        compiled()
        capture_seconds[style] = time.perf_counter() - started
        contenders = {"eager": eager, "compiled": compiled}
        if torch is not None:
            contenders.update(_torch_contenders(torch, threads,
                                                gpt_step(torch, sizes, style=style)))
        gpt_times[style] = median_times(contenders, repeats=args.repeats, warmup=2)
        rows.append(_row(f"{name}, {size_text}", 1e3, "ms", gpt_times[style]))

    eager_translate, compiled_translate = translate_step(args.quick)
    for heap, prepare in (("the C allocator's defaults", None),
                          ("the command's heap setting", keep_freed_memory)):
        if prepare is not None:
            prepare()  # for the rest of this process (the rows above are done)
        rows.append(_row(f"toy_translate step (CPU defaults, one batch shape), {heap}",
                         1e3, "ms",
                         median_times({"eager": eager_translate,
                                       "compiled": compiled_translate},
                                      repeats=args.repeats, warmup=2)))
    rows.append(_row("GPT step: first compiled call (capture) vs an eager step", 1e3, "ms",
                     {"eager": gpt_times["char_lm"]["eager"],
                      "compiled": capture_seconds["char_lm"]}))
    for cache in ("warm",) if args.quick else ("warm", "cold"):  # cold: every kernel compiles
        first = {kind: _first_step_in_new_process(kind, args.quick, cache)
                 for kind in ("eager", "compiled")}
        rows.append(_row(f"toy_translate: first step in a new process, kernel cache {cache}",
                         1e3, "ms", first))
    columns = ["case", "eager minigrad", "compiled", "PyTorch eager, 1 thread"]
    if threads > 1:
        columns.append(f"PyTorch eager, {threads} threads")
    columns += ["eager / compiled", "compiled / PyTorch 1 thread"]
    if threads > 1:
        columns.append(f"compiled / PyTorch {threads} threads")
    print_table(columns, [row if threads > 1 else _without_threaded(row) for row in rows])
    print(f"PyTorch {torch.__version__ if torch else '(not installed)'}; its default is "
          f"{threads} threads here. New processes: the first step of toy_translate's "
          f"Transformer, eager or compiled (capture included), after imports; 'cold' runs "
          f"with an empty NUMBA_CACHE_DIR, so every Numba kernel compiles"
          f"{' (left out by --quick)' if args.quick else ''}.")


def _torch_on_one_thread():
    """torch set to one thread, and its default thread count (None, 0 without it)."""
    try:
        import torch
    except ImportError:
        print("(PyTorch not installed: its columns are left out)")
        return None, 0
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    return torch, threads


def _torch_contenders(torch, threads: int, step) -> dict:
    """The PyTorch step on one thread, and on its default threads when that is more."""
    contenders = {"torch": step}
    if threads > 1:
        def threaded():
            torch.set_num_threads(threads)
            try:
                return step()
            finally:
                torch.set_num_threads(1)

        contenders["torch threaded"] = threaded
    return contenders


def _first_translate_step(kind: str, quick: bool) -> float:
    """Seconds of the first toy_translate step of `kind` in this process."""
    eager, compiled = translate_step(quick)
    step = eager if kind == "eager" else compiled
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def _first_step_in_new_process(kind: str, quick: bool, cache: str) -> float:
    """_first_translate_step in a child process; cache "cold": an empty Numba cache."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as empty:
        if cache == "cold":
            env["NUMBA_CACHE_DIR"] = empty
        command = [sys.executable, "-m", "benchmarks.bench_compile", "--first-step", kind]
        result = subprocess.run(command + (["--quick"] if quick else []), env=env,
                                capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _row(case: str, scale: float, unit: str, times: dict) -> list:
    def shown(name):
        value = times.get(name)
        return "-" if value is None else f"{value * scale:.2f} {unit}"

    def ratio(name):
        value = times.get(name)
        return "-" if value is None else f"{times['compiled'] / value:.2f}"

    return [case, shown("eager"), shown("compiled"), shown("torch"), shown("torch threaded"),
            f"{times['eager'] / times['compiled']:.2f}", ratio("torch"),
            ratio("torch threaded")]


def _without_threaded(row: list) -> list:
    """A row less its columns for PyTorch on several threads."""
    return row[:4] + row[5:7]


if __name__ == "__main__":
    main()
