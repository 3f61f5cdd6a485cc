"""One Transformer training step (forward, backward, Adam): minigrad vs PyTorch vs tinygrad.

    python -m benchmarks.bench_train                       # CPU, all configurations
    python -m benchmarks.bench_train --config small --steps 30
    python -m benchmarks.bench_train --framework minigrad --framework torch
    python -m benchmarks.bench_train --device gpu          # CuPy (and PyTorch CUDA)
    python -m benchmarks.bench_train --config paper-base --framework minigrad \
        --framework minigrad-compiled                      # the step as one mg.compile plan

Every framework builds the same model (token embeddings scaled by sqrt(d_model),
sinusoidal positions, post-norm encoder-decoder, final Linear; see benchmarks/rivals/ for
the PyTorch and tinygrad versions), sees the same batch and uses Adam(0.9, 0.98, 1e-9)
with label-smoothed cross-entropy. The rivals run when installed (tinygrad twice: eager,
and its TinyJit replay). Steps alternate between the frameworks after a warm-up, and the
table reports medians. Peak memory is measured in a separate child process per framework:
the growth of the resident set from before the model is built to the peak of three steps
(after a tiny warm-up run that loads compiled kernels and thread pools), and to the peak
of two steps after those ("later steps": a compiled step's captures are over by then).
"""
from __future__ import annotations

import argparse
import functools
import importlib
import json
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Config:
    name: str
    vocab: int
    d_model: int
    nhead: int
    layers: int
    ff: int
    batch: int
    length: int
    dropout: float = 0.1
    steps: int = 20


CONFIGS = {
    # a small translation model with a realistic vocabulary
    "small": Config("small", vocab=1000, d_model=128, nhead=4, layers=2, ff=512, batch=64,
                    length=16),
    "paper-base": Config("paper-base", vocab=1000, d_model=512, nhead=8, layers=6, ff=2048,
                         batch=16, length=16, steps=4),
}


def toy_translate_config() -> Config:
    """The default model and batch of `python -m train.toy_translate`."""
    from train.toy_translate import DEFAULTS

    return Config("toy_translate", vocab=DEFAULTS.vocab_estimate, d_model=DEFAULTS.d_model,
                  nhead=DEFAULTS.heads, layers=DEFAULTS.layers, ff=DEFAULTS.ff,
                  batch=DEFAULTS.batch_size, length=DEFAULTS.length_estimate,
                  dropout=DEFAULTS.dropout)


def make_batch(config: Config, seed: int = 0):
    rng = np.random.default_rng(seed)
    src = rng.integers(4, config.vocab, size=(config.batch, config.length))
    tgt = rng.integers(4, config.vocab, size=(config.batch, config.length + 1))
    tgt[:, 0] = 1  # <s>
    return src, tgt


# ----------------------------------------------------------------------------- frameworks


def minigrad_step_fn(config: Config, batch, device: str, wrap=None, compiled=False):
    """A training step of minigrad on `batch`; `wrap(model)` (a DistributedDataParallel,
    say) is trained instead of the model when given. `compiled`: the whole step (zero_grad,
    forward, backward, Adam) is one mg.compile plan, fullgraph, so that a step that would
    run eagerly fails the benchmark instead of timing eager work."""
    import minigrad as mg

    train_step = minigrad_train_step(config, batch, device, wrap)
    if not compiled:
        return lambda: train_step().item()  # forces the device to finish, like a loop's log
    run = mg.compile(train_step, fullgraph=True)

    def step() -> float:
        loss = run().item()
        if not step.reported:  # after the capture: what fusion made of the step
            step.reported = True
            print(fusion_summary(run.plans()), file=sys.stderr, flush=True)
        return loss

    step.reported = False
    return step


def minigrad_train_step(config: Config, batch, device: str, wrap=None):
    """The step itself, a function of no arguments returning the loss: zero_grad, the
    forward and the loss, backward, Adam's update (of a model built from seed 0)."""
    import minigrad as mg
    import minigrad.nn.functional as F
    from models import Transformer

    mg.manual_seed(0)
    model = Transformer(config.vocab, config.vocab, d_model=config.d_model, nhead=config.nhead,
                        num_encoder_layers=config.layers, num_decoder_layers=config.layers,
                        dim_feedforward=config.ff, dropout=config.dropout).to(device)
    if wrap is not None:
        model = wrap(model)
    optimizer = mg.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    src_np, tgt_np = batch
    src = mg.tensor(src_np, device=device)
    tgt_in = mg.tensor(tgt_np[:, :-1], device=device)
    tgt_out = mg.tensor(tgt_np[:, 1:], device=device)
    model.train()

    def train_step():
        optimizer.zero_grad()
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, config.vocab), tgt_out.reshape(-1),
                               ignore_index=0, label_smoothing=0.1)
        loss.backward()
        optimizer.step()
        return loss

    return train_step


def fusion_summary(plans: list) -> str:
    """One line: how many fused kernels the plans run, and any group whose kernel failed
    to build (on a GPU, a generated CUDA kernel NVRTC refused)."""
    groups = sum(len(plan.fused_groups()) for plan in plans)
    failures = [failure for plan in plans for failure in plan.fusion_failures]
    line = f"mg.compile: {groups} fused kernels in {len(plans)} plan(s)"
    if failures:
        line += f"; {len(failures)} group(s) left unfused: {failures[0]}"
    return line


def torch_step_fn(config: Config, batch, device: str, compile_mode=None):
    from benchmarks.rivals import torch_model

    return torch_model.step_fn(config, batch, device, compile_mode=compile_mode)


def tinygrad_step_fn(config: Config, batch, device: str, jit: bool = False):
    from benchmarks.rivals import tinygrad_model

    return tinygrad_model.step_fn(config, batch, jit)


# name -> (the rival's module in benchmarks/rivals, or None for minigrad; step factory);
# the compiled contenders are left out unless asked for by name
FRAMEWORKS = {
    "minigrad": (None, minigrad_step_fn),
    "minigrad-compiled": (None, functools.partial(minigrad_step_fn, compiled=True)),
    "torch": ("torch_model", torch_step_fn),
    "torch-compiled": ("torch_model",
                       functools.partial(torch_step_fn, compile_mode="reduce-overhead")),
    "tinygrad": ("tinygrad_model", tinygrad_step_fn),
    "tinygrad-jit": ("tinygrad_model",
                     lambda config, batch, device: tinygrad_step_fn(config, batch, device, True)),
}


def installed(name: str, device: str) -> bool:
    """True when `name` can run here: minigrad always, a rival when its library imports."""
    module = FRAMEWORKS[name][0]
    if module is None:
        return True
    try:
        rival = importlib.import_module(f"benchmarks.rivals.{module}")
    except ImportError:
        return False
    if name.endswith("-compiled"):
        return rival.compiled_available(device)
    return rival.available(device)


def make_step(name: str, config: Config, device: str):
    return FRAMEWORKS[name][1](config, make_batch(config), device)


# ----------------------------------------------------------------------------- measuring


def time_steps(config: Config, device: str, frameworks: list, warmup: int = 3) -> dict:
    """Median seconds per step of each framework, steps alternating between them. (Three
    warm-up steps: tinygrad's TinyJit records on the second call and replays from the
    third.)"""
    steps = {name: make_step(name, config, device) for name in frameworks}
    for step in steps.values():
        for _ in range(warmup):
            step()
    samples: dict = {name: [] for name in steps}
    for _ in range(config.steps):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            samples[name].append(time.perf_counter() - start)
    return {name: float(np.median(values)) for name, values in samples.items()}


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def _peak_resident_bytes() -> int:
    """VmHWM, the peak resident set of this process image. (ru_maxrss would not do: Linux
    carries it over from the parent across fork and exec.)"""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child_peak_memory(config: Config, device: str, framework: str) -> None:
    """(In a child process) print the resident-set growth of training: model, optimizer
    state and activations, at the peak of the first three steps (which hold a compiled
    step's captures) and of two steps after them (VmHWM reset in between). A tiny
    warm-up run first loads what every process loads once (Numba and its cached
    kernels, PyTorch's thread pools, tinygrad's compiler), so it is not counted."""

    tiny = Config(**{**asdict(config), "batch": 2, "length": 4})
    warm_step = make_step(framework, tiny, device)
    if framework.startswith("minigrad"):
        from minigrad import kernels

        with kernels.mode("numba"):  # tiny inputs would otherwise skip the kernels
            warm_step()
    else:
        warm_step()
    del warm_step
    _return_free_memory()  # the warm-up's freed arrays would otherwise count as "before"
    before = _resident_bytes()
    step = make_step(framework, config, device)
    for _ in range(3):
        step()
    peak = _peak_resident_bytes()
    _return_free_memory()
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # VmHWM := the resident set now
    for _ in range(2):
        step()
    later = _peak_resident_bytes()
    print(json.dumps({"peak_growth": max(peak - before, 0), "peak": peak,
                      "later_growth": max(later - before, 0)}))


def _return_free_memory() -> None:
    """glibc's malloc_trim(0): hand the heap's free pages back to the system, so that the
    resident set is what is in use (the captures' freed arrays stay resident otherwise)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the figure then includes freed memory
        pass


def peak_memory(config: Config, device: str, framework: str) -> dict | None:
    """{"peak_growth": bytes, "later_growth": bytes} of a child process (see
    child_peak_memory); None on a GPU."""
    if device != "cpu":
        return None  # host RSS says nothing about device memory
    command = [sys.executable, "-m", "benchmarks.bench_train", "--memory-child", framework,
               "--config-json", json.dumps(asdict(config)), "--device", device]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


HEADERS = ["config", "d_model/layers/batch", "framework", "ms/step", "target tok/s",
           "minigrad/this time", "step peak MiB", "minigrad/this memory", "later steps MiB"]


def table_rows(config: Config, times: dict, memory: dict) -> list:
    """One row per framework; the ratios are minigrad's figure over that framework's."""
    tokens = config.batch * config.length
    shape = f"{config.d_model}/{config.layers}+{config.layers}/b{config.batch}xL{config.length}"
    rows = []
    mine = (memory.get("minigrad") or {}).get("peak_growth")
    for name, seconds in times.items():
        measured = memory.get(name) or {}
        mem, later = measured.get("peak_growth"), measured.get("later_growth")
        mem_ratio = "-"
        if mem and mine is not None and name != "minigrad":
            mem_ratio = f"{mine / mem:.2f}"
        rows.append([
            config.name, shape, name, f"{seconds * 1e3:.1f}", f"{tokens / seconds:,.0f}",
            "-" if name == "minigrad" else f"{times['minigrad'] / seconds:.2f}",
            "-" if mem is None else f"{mem / 2**20:.0f}", mem_ratio,
            "-" if later is None else f"{later / 2**20:.0f}",
        ])
    return rows


def _print_row(cells: list) -> None:
    """One line of the markdown table, out at once (not held in a pipe's buffer)."""
    print("| " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--config", action="append",
                        choices=["small", "toy_translate", "paper-base"],
                        help="configurations to run (default: all)")
    parser.add_argument("--framework", action="append", choices=list(FRAMEWORKS),
                        help="frameworks to run (default: minigrad and every installed "
                             "rival, eager; minigrad-compiled and torch-compiled "
                             "(torch.compile, mode reduce-overhead: GPU only) by name)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per framework")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory children")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--config-json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        child_peak_memory(Config(**json.loads(args.config_json)), args.device,
                          args.memory_child)
        return
    names = args.config or ["small", "toy_translate", "paper-base"]
    configs = dict(CONFIGS)
    if "toy_translate" in names:
        configs["toy_translate"] = toy_translate_config()
    requested = args.framework or [f for f in FRAMEWORKS if not f.endswith("-compiled")]
    frameworks = ["minigrad"] + [
        f for f in requested if f != "minigrad" and installed(f, args.device)]
    if args.framework:
        for missing in sorted(set(requested) - set(frameworks)):
            print(f"({missing} is not installed for {args.device}: left out)", file=sys.stderr)
    # each row as soon as it is measured: a run stopped by a time limit keeps the rows done
    print(f"device: {args.device}")
    _print_row(HEADERS)
    _print_row(["---"] * len(HEADERS))
    for name in names:
        config = configs[name]
        if args.steps:
            config = Config(**{**asdict(config), "steps": args.steps})
        times = time_steps(config, args.device, frameworks)
        memory = {} if args.no_memory else {
            f: peak_memory(config, args.device, f) for f in frameworks}
        for row in table_rows(config, times, memory):
            _print_row(row)
        print(f"[{name}] done", file=sys.stderr)


if __name__ == "__main__":
    main()
