"""One Transformer training step (forward, backward, Adam): minigrad vs PyTorch.

    python -m benchmarks.bench_train                       # CPU, all configurations
    python -m benchmarks.bench_train --config issue --steps 30
    python -m benchmarks.bench_train --device gpu          # CuPy (and PyTorch CUDA)

Both frameworks build the same model (token embeddings scaled by sqrt(d_model),
sinusoidal positions, post-norm encoder-decoder, final Linear), start from the same
weights' shapes, see the same batch and use Adam(0.9, 0.98, 1e-9) with label-smoothed
cross-entropy. Steps alternate between the frameworks after a warm-up, and the table
reports medians. Peak memory is measured in a separate child process per framework:
the growth of the resident set from before the model is built to the peak of three
steps (after a tiny warm-up run that loads compiled kernels and thread pools).
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

from benchmarks.timing import print_table


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
    # the configuration named in issue 8
    "issue": Config("issue", vocab=1000, d_model=128, nhead=4, layers=2, ff=512, batch=64,
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


# ----------------------------------------------------------------------------- minigrad


def minigrad_step_fn(config: Config, device: str):
    import minigrad as mg
    import minigrad.nn.functional as F
    from models import Transformer

    mg.manual_seed(0)
    model = Transformer(config.vocab, config.vocab, d_model=config.d_model, nhead=config.nhead,
                        num_encoder_layers=config.layers, num_decoder_layers=config.layers,
                        dim_feedforward=config.ff, dropout=config.dropout).to(device)
    optimizer = mg.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    src_np, tgt_np = make_batch(config)
    src = mg.tensor(src_np, device=device)
    tgt_in = mg.tensor(tgt_np[:, :-1], device=device)
    tgt_out = mg.tensor(tgt_np[:, 1:], device=device)
    model.train()

    def step() -> float:
        optimizer.zero_grad()
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, config.vocab), tgt_out.reshape(-1),
                               ignore_index=0, label_smoothing=0.1)
        loss.backward()
        optimizer.step()
        value = loss.item()  # forces the device to finish, like a real loop's logging
        return value

    return step


# ----------------------------------------------------------------------------- torch


def torch_step_fn(config: Config, device: str):
    import torch
    from torch import nn

    torch.manual_seed(0)
    torch_device = "cuda" if device == "gpu" else "cpu"

    class TorchTranslationModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_embed = nn.Embedding(config.vocab, config.d_model)
            self.tgt_embed = nn.Embedding(config.vocab, config.d_model)
            self.transformer = nn.Transformer(
                config.d_model, config.nhead, config.layers, config.layers, config.ff,
                config.dropout, batch_first=True)
            self.out = nn.Linear(config.d_model, config.vocab)
            position = torch.arange(512).unsqueeze(1)
            div = torch.exp(torch.arange(0, config.d_model, 2) * (-math.log(10000.0)
                                                                   / config.d_model))
            pe = torch.zeros(512, config.d_model)
            pe[:, 0::2] = torch.sin(position * div)
            pe[:, 1::2] = torch.cos(position * div)
            self.register_buffer("pe", pe)

        def embed(self, table, ids):
            return table(ids) * math.sqrt(config.d_model) + self.pe[: ids.shape[1]]

        def forward(self, src, tgt):
            # bool like the padding masks (True = blocked): mixed mask types make torch
            # warn and take a slower path
            length = tgt.shape[1]
            causal = torch.ones(length, length, dtype=torch.bool, device=tgt.device).triu(1)
            hidden = self.transformer(
                self.embed(self.src_embed, src), self.embed(self.tgt_embed, tgt),
                tgt_mask=causal, src_key_padding_mask=src == 0,
                tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0)
            return self.out(hidden)

    model = TorchTranslationModel().to(torch_device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    src_np, tgt_np = make_batch(config)
    src = torch.tensor(src_np, device=torch_device)
    tgt_in = torch.tensor(tgt_np[:, :-1], device=torch_device)
    tgt_out = torch.tensor(tgt_np[:, 1:], device=torch_device)
    model.train()

    def step() -> float:
        optimizer.zero_grad()
        logits = model(src, tgt_in)
        loss = loss_fn(logits.reshape(-1, config.vocab), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


FRAMEWORKS = {"minigrad": minigrad_step_fn, "torch": torch_step_fn}


def torch_available(device: str) -> bool:
    try:
        import torch
    except ImportError:
        return False
    return device == "cpu" or torch.cuda.is_available()


# ----------------------------------------------------------------------------- measuring


def time_steps(config: Config, device: str, frameworks: list, warmup: int = 3) -> dict:
    """Median seconds per step of each framework, steps alternating between them."""
    steps = {name: FRAMEWORKS[name](config, device) for name in frameworks}
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
    state and activations. A tiny warm-up run first loads what every process loads once
    (Numba and its cached kernels, PyTorch's thread pools), so it is not counted."""
    import gc

    tiny = Config(**{**asdict(config), "batch": 2, "length": 4})
    warm_step = FRAMEWORKS[framework](tiny, device)
    if framework == "minigrad":
        from minigrad import kernels

        with kernels.mode("numba"):  # tiny inputs would otherwise skip the kernels
            warm_step()
    else:
        warm_step()
    del warm_step
    gc.collect()
    before = _resident_bytes()
    step = FRAMEWORKS[framework](config, device)
    for _ in range(3):
        step()
    peak = _peak_resident_bytes()
    print(json.dumps({"peak_growth": max(peak - before, 0), "peak": peak}))


def peak_memory(config: Config, device: str, framework: str) -> int | None:
    if device != "cpu":
        return None  # host RSS says nothing about device memory
    command = [sys.executable, "-m", "benchmarks.bench_train", "--memory-child", framework,
               "--config-json", json.dumps(asdict(config)), "--device", device]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])["peak_growth"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--config", action="append",
                        choices=["issue", "toy_translate", "paper-base"],
                        help="configurations to run (default: all)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per framework")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory children")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--config-json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        child_peak_memory(Config(**json.loads(args.config_json)), args.device,
                          args.memory_child)
        return
    names = args.config or ["issue", "toy_translate", "paper-base"]
    configs = dict(CONFIGS)
    if "toy_translate" in names:
        configs["toy_translate"] = toy_translate_config()
    frameworks = ["minigrad"] + (["torch"] if torch_available(args.device) else [])
    rows = []
    for name in names:
        config = configs[name]
        if args.steps:
            config = Config(**{**asdict(config), "steps": args.steps})
        times = time_steps(config, args.device, frameworks)
        tokens = config.batch * config.length
        memory = {} if args.no_memory else {
            f: peak_memory(config, args.device, f) for f in frameworks}
        row = [name, f"{config.d_model}/{config.layers}+{config.layers}/b{config.batch}"
               f"xL{config.length}"]
        for f in frameworks:
            row += [f"{times[f] * 1e3:.1f}", f"{tokens / times[f]:,.0f}"]
        if "torch" in times:
            row.append(f"{times['minigrad'] / times['torch']:.2f}")
        for f in frameworks:
            mem = memory.get(f)
            row.append("-" if mem is None else f"{mem / 2**20:.0f}")
        if "torch" in memory and memory.get("torch"):
            row.append(f"{memory['minigrad'] / memory['torch']:.2f}")
        rows.append(row)
        print(f"[{name}] done", file=sys.stderr)
    headers = ["config", "d_model/layers/batch"]
    for f in frameworks:
        headers += [f"{f} ms/step", f"{f} tok/s"]
    if "torch" in frameworks:
        headers.append("time ratio")
    headers += [f"{f} step peak MiB" for f in frameworks]
    if "torch" in frameworks and not args.no_memory and args.device == "cpu":
        headers.append("memory ratio")
    print(f"device: {args.device}")
    print_table(headers, rows)


if __name__ == "__main__":
    main()
