"""The benchmark's Transformer written in tinygrad: the same layers as models/ (post-norm
encoder-decoder of "Attention Is All You Need", W_Q, W_K, W_V, W_O per attention, dropout
on sub-layer outputs and attention weights, no final stack norms), the same batch, Adam
and label-smoothed cross-entropy as benchmarks/bench_train.py gives the others.

tinygrad is lazy: a step builds a graph of UOps, `.item()` schedules, compiles (clang, on
the CPU) and runs it. Two ways of running a step are measured:
- "eager": the step as written; tinygrad re-schedules the graph every step (compiled
  kernels are cached);
- "jit": the step under TinyJit, which records the kernels of one step and replays them.
"""
from __future__ import annotations

import math

import numpy as np
from tinygrad import Tensor, TinyJit, nn
from tinygrad.helpers import Context


class Attention:
    def __init__(self, d_model: int, nhead: int, dropout: float):
        self.nhead, self.dropout = nhead, dropout
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def __call__(self, query: Tensor, memory: Tensor, blocked: Tensor) -> Tensor:
        """`blocked` (bool, broadcasts to (batch, heads, Lq, Lk)) is True where a query
        may not attend."""
        batch, length, d_model = query.shape
        head = d_model // self.nhead

        def split(x: Tensor) -> Tensor:
            return x.reshape(batch, x.shape[1], self.nhead, head).transpose(1, 2)

        q, k, v = split(self.w_q(query)), split(self.w_k(memory)), split(self.w_v(memory))
        scores = blocked.where(-math.inf, q @ k.transpose(-2, -1) / math.sqrt(head))
        weights = scores.softmax(-1).dropout(self.dropout)
        return self.w_o((weights @ v).transpose(1, 2).reshape(batch, length, d_model))


class FeedForward:
    def __init__(self, d_model: int, ff: int, dropout: float):
        self.linear1, self.linear2 = nn.Linear(d_model, ff), nn.Linear(ff, d_model)
        self.dropout = dropout

    def __call__(self, x: Tensor) -> Tensor:
        return self.linear2(self.linear1(x).relu().dropout(self.dropout))


class EncoderLayer:
    def __init__(self, d_model: int, nhead: int, ff: int, dropout: float):
        self.self_attn = Attention(d_model, nhead, dropout)
        self.feed_forward = FeedForward(d_model, ff, dropout)
        self.norms = [nn.LayerNorm(d_model) for _ in range(2)]
        self.dropout = dropout

    def __call__(self, x: Tensor, blocked: Tensor) -> Tensor:
        x = self.norms[0](x + self.self_attn(x, x, blocked).dropout(self.dropout))
        return self.norms[1](x + self.feed_forward(x).dropout(self.dropout))


class DecoderLayer:
    def __init__(self, d_model: int, nhead: int, ff: int, dropout: float):
        self.self_attn = Attention(d_model, nhead, dropout)
        self.cross_attn = Attention(d_model, nhead, dropout)
        self.feed_forward = FeedForward(d_model, ff, dropout)
        self.norms = [nn.LayerNorm(d_model) for _ in range(3)]
        self.dropout = dropout

    def __call__(self, x, memory, self_blocked, memory_blocked) -> Tensor:
        x = self.norms[0](x + self.self_attn(x, x, self_blocked).dropout(self.dropout))
        x = self.norms[1](x + self.cross_attn(x, memory, memory_blocked).dropout(self.dropout))
        return self.norms[2](x + self.feed_forward(x).dropout(self.dropout))


class TranslationModel:
    """Attribute names follow models.Transformer's (tests/test_benchmark_rivals.py copies
    minigrad's weights in by name)."""

    def __init__(self, config):
        d_model = config.d_model
        self.d_model = d_model
        self.src_embed = nn.Embedding(config.vocab, d_model)
        self.tgt_embed = nn.Embedding(config.vocab, d_model)
        self.encoder = [EncoderLayer(d_model, config.nhead, config.ff, config.dropout)
                        for _ in range(config.layers)]
        self.decoder = [DecoderLayer(d_model, config.nhead, config.ff, config.dropout)
                        for _ in range(config.layers)]
        self.generator = nn.Linear(d_model, config.vocab)
        self.positions = Tensor(_sinusoidal_positions(512, d_model)).is_param_(False)

    def embed(self, table: nn.Embedding, ids: Tensor) -> Tensor:
        return table(ids) * math.sqrt(self.d_model) + self.positions[: ids.shape[1]]

    def __call__(self, src: Tensor, tgt: Tensor) -> Tensor:
        length = tgt.shape[1]
        src_blocked = (src == 0).reshape(src.shape[0], 1, 1, src.shape[1])
        causal = Tensor.ones(length, length).triu(1).cast("bool")
        tgt_blocked = causal | (tgt == 0).reshape(tgt.shape[0], 1, 1, length)
        memory = self.embed(self.src_embed, src)
        for layer in self.encoder:
            memory = layer(memory, src_blocked)
        x = self.embed(self.tgt_embed, tgt)
        for layer in self.decoder:
            x = layer(x, memory, tgt_blocked, src_blocked)
        return self.generator(x)


def _sinusoidal_positions(length: int, d_model: int) -> np.ndarray:
    position = np.arange(length)[:, None]
    rate = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    table = np.zeros((length, d_model), np.float32)
    table[:, 0::2], table[:, 1::2] = np.sin(position * rate), np.cos(position * rate)
    return table


def available(device: str) -> bool:
    return device == "cpu"  # (tinygrad's CUDA backend is not set up on the GPU machine)


def step_fn(config, batch, jit: bool):
    """A training step of tinygrad on `batch` = (src, tgt) NumPy ids; returns the loss."""
    Tensor.manual_seed(0)
    model = TranslationModel(config)
    optimizer = nn.optim.Adam(nn.state.get_parameters(model), lr=1e-4, b1=0.9, b2=0.98,
                              eps=1e-9)
    src_np, tgt_np = batch
    src = Tensor(src_np.astype(np.int32)).is_param_(False)
    tgt_in = Tensor(tgt_np[:, :-1].astype(np.int32)).is_param_(False)
    tgt_out = Tensor(tgt_np[:, 1:].astype(np.int32)).is_param_(False)

    def train_step() -> Tensor:
        with Context(TRAINING=1):
            optimizer.zero_grad()
            logits = model(src, tgt_in)
            loss = logits.sparse_categorical_crossentropy(tgt_out, ignore_index=0,
                                                          label_smoothing=0.1)
            loss.backward()
            return loss.realize(*optimizer.schedule_step())

    run = TinyJit(train_step) if jit else train_step

    def step() -> float:
        return run().item()

    return step
