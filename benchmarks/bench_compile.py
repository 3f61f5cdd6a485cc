"""mg.compile against eager minigrad and eager PyTorch (CPU, one thread), in one table.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_compile [--repeats 30] [--quick]

Rows (median time per call, calls of the contenders interleaved; ratios from the same
medians):
- the tiny accumulating graph of bench_overhead.py, ((p+q)*q).sum() backward on (4, 4)
  leaves whose .grad accumulates: per-op overhead, where compiling pays most;
- a character-level GPT training step (4 layers, 4 heads, width 64, context 16, batch
  32; forward, backward, AdamW step, zero_grad), the whole step compiled;
- a training step of `python -m train.toy_translate`'s Transformer at its CPU defaults,
  on one batch shape (the model compiled, backward through its node);
- the capture: the first call of the compiled GPT step (run, roll back, replay, compare)
  against one eager step.
Everything is compiled with fullgraph=True: a step that would run eagerly fails the
script. --quick runs every row on little work (a smaller GPT), for the tests. One BLAS thread,
as PyTorch gets one: on a busy machine a second one mostly waits.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import minigrad as mg
import minigrad.nn.functional as F
from benchmarks.bench_overhead import ACCUMULATING, framework_cases, inputs
from benchmarks.timing import median_times, print_table
from train.char_lm_model import ModelConfig, char_lm_class
from train.checkpoint import new_train_state
from train.config import DEFAULTS
from train.data import make_dataset
from train.loop import make_batch

GPT = dict(layers=4, heads=4, embedding=64, context=16, batch=32, vocab=65)
QUICK_GPT = dict(layers=1, heads=2, embedding=16, context=8, batch=4, vocab=17)


def gpt_step(library, sizes: dict, seed: int = 0):
    """One training step of the GPT of `library` (minigrad or torch), from the same
    initial weights, as a function of no arguments (the batch is fixed)."""
    config = ModelConfig(kind="transformer", vocab_size=sizes["vocab"],
                         embedding=sizes["embedding"], hidden=sizes["embedding"],
                         layers=sizes["layers"], heads=sizes["heads"],
                         feedforward=4 * sizes["embedding"], context=sizes["context"],
                         dropout=0.1, tie_weights=True)
    library.manual_seed(seed)
    model = char_lm_class(library)(config)
    if library is not mg:
        minigrad_model = char_lm_class(mg)(config)
        model.load_state_dict({k: library.tensor(v.array)
                               for k, v in minigrad_model.state_dict().items()})
    optimizer = library.optim.AdamW(model.parameters(), lr=1e-3)
    ids = np.random.default_rng(seed).integers(0, config.vocab_size,
                                              (sizes["batch"], config.context + 1))
    x, y = library.tensor(ids[:, :-1]), library.tensor(ids[:, 1:])
    cross_entropy = library.nn.functional.cross_entropy

    def step():
        optimizer.zero_grad()
        logits, _ = model(x)
        loss = cross_entropy(logits.reshape(-1, config.vocab_size), y.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    return step


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

        steps[name] = step
    return steps["eager"], steps["compiled"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="interleaved rounds")
    parser.add_argument("--quick", action="store_true", help="little work (for tests)")
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
        print("(PyTorch not installed: its column is left out)")
    sizes = QUICK_GPT if args.quick else GPT
    rows = []

    tiny = {"eager": framework_cases(mg, inputs())[ACCUMULATING],
            "compiled": mg.compile(framework_cases(mg, inputs())[ACCUMULATING],
                                   fullgraph=True)}
    if torch is not None:
        tiny["torch"] = framework_cases(torch, inputs())[ACCUMULATING]
    rows.append(_row("tiny graph, " + ACCUMULATING, 1e6, "us",
                     median_times(tiny, repeats=args.repeats * 20, inner=10)))

    eager = gpt_step(mg, sizes)
    eager()  # loads the Numba kernels, which the capture would be charged for otherwise
    capture_step = mg.compile(gpt_step(mg, sizes), fullgraph=True)
    started = time.perf_counter()
    capture_step()
    capture_seconds = time.perf_counter() - started
    gpt = {"eager": eager, "compiled": capture_step}
    if torch is not None:
        gpt["torch"] = gpt_step(torch, sizes)
    name = ("GPT step, {layers} layers x {heads} heads, width {embedding}, context "
            "{context}, batch {batch}").format(**sizes)
    gpt_times = median_times(gpt, repeats=args.repeats, warmup=2)
    rows.append(_row(name, 1e3, "ms", gpt_times))

    eager_translate, compiled_translate = translate_step(args.quick)
    rows.append(_row("toy_translate step (CPU defaults, one batch shape)", 1e3, "ms",
                     median_times({"eager": eager_translate, "compiled": compiled_translate},
                                  repeats=args.repeats, warmup=2)))
    rows.append(_row("GPT step: first compiled call (capture) vs an eager step", 1e3, "ms",
                     {"eager": gpt_times["eager"], "compiled": capture_seconds}))
    print_table(["case", "eager minigrad", "compiled", "PyTorch eager", "eager / compiled",
                 "compiled / PyTorch"], rows)


def _row(case: str, scale: float, unit: str, times: dict) -> list:
    torch_time = times.get("torch")
    return [case,
            f"{times['eager'] * scale:.2f} {unit}",
            f"{times['compiled'] * scale:.2f} {unit}",
            "-" if torch_time is None else f"{torch_time * scale:.2f} {unit}",
            f"{times['eager'] / times['compiled']:.2f}",
            "-" if torch_time is None else f"{times['compiled'] / torch_time:.2f}"]


if __name__ == "__main__":
    main()
