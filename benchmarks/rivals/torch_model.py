"""The benchmark's Transformer in PyTorch: nn.Transformer (post-norm, batch_first) between
token embeddings scaled by sqrt(d_model) plus sinusoidal positions and a final Linear, with
the same Adam and label-smoothed cross-entropy as benchmarks/bench_train.py gives minigrad.
(nn.Transformer adds a LayerNorm after each stack, which minigrad's post-norm model, like
the paper, does not: two LayerNorms out of 12 in the small configuration.)
"""
from __future__ import annotations

import math

import torch
from torch import nn


class TranslationModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.d_model = config.d_model
        self.src_embed = nn.Embedding(config.vocab, config.d_model)
        self.tgt_embed = nn.Embedding(config.vocab, config.d_model)
        self.transformer = nn.Transformer(
            config.d_model, config.nhead, config.layers, config.layers, config.ff,
            config.dropout, batch_first=True)
        self.out = nn.Linear(config.d_model, config.vocab)
        position = torch.arange(512).unsqueeze(1)
        rate = torch.exp(torch.arange(0, config.d_model, 2)
                         * (-math.log(10000.0) / config.d_model))
        positions = torch.zeros(512, config.d_model)
        positions[:, 0::2] = torch.sin(position * rate)
        positions[:, 1::2] = torch.cos(position * rate)
        self.register_buffer("positions", positions)

    def embed(self, table, ids):
        return table(ids) * math.sqrt(self.d_model) + self.positions[: ids.shape[1]]

    def forward(self, src, tgt):
        # bool like the padding masks (True = blocked): mixed mask types make torch warn
        # and take a slower path
        length = tgt.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=tgt.device).triu(1)
        hidden = self.transformer(
            self.embed(self.src_embed, src), self.embed(self.tgt_embed, tgt),
            tgt_mask=causal, src_key_padding_mask=src == 0,
            tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0)
        return self.out(hidden)


def available(device: str) -> bool:
    return device == "cpu" or torch.cuda.is_available()


def compiled_available(device: str) -> bool:
    """torch.compile(mode="reduce-overhead") is CUDA graphs: a GPU-only rival."""
    return device == "gpu" and torch.cuda.is_available()


def step_fn(config, batch, device: str, wrap=None, compile_mode=None):
    """A training step of PyTorch eager on `batch` = (src, tgt) NumPy ids; returns the
    loss. `wrap(model)` (a DistributedDataParallel, say) is trained instead of the model
    when given; with `compile_mode`, the model is torch.compile(model, mode=compile_mode)
    (its forward and, through AOTAutograd, its backward)."""
    torch.manual_seed(0)
    torch_device = "cuda" if device == "gpu" else "cpu"
    model = TranslationModel(config).to(torch_device)
    if wrap is not None:
        model = wrap(model)
    if compile_mode is not None:
        model = torch.compile(model, mode=compile_mode)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    loss_fn = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    src_np, tgt_np = batch
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
