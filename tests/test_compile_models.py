"""Compiled training equals eager training bit for bit on the CPU: a small GPT-like model
(train/char_lm_model.py's Transformer) with a whole step compiled, the digits CNN
(train/digits.py) and a BatchNorm model compiled as modules, over several steps, with
dropout, a schedule, gradient clipping and running statistics; and compiled inference."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_bits_equal

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn, optim
from train.char_lm_model import ModelConfig, char_lm_class
from train.digits import build_model

# a step that falls back to eager fails the test
pytestmark = pytest.mark.filterwarnings("error:mg.compile")

STEPS = 3


def _state(model, optimizer) -> list:
    arrays = [p.array.copy() for p in model.parameters()]
    arrays += [p.grad.array.copy() for p in model.parameters() if p.grad is not None]
    arrays += [b.array.copy() for b in model.buffers()]
    arrays += [v.copy() for s in optimizer.state.values() for v in s.values()
               if isinstance(v, np.ndarray)]
    return arrays


def _gpt() -> nn.Module:
    config = ModelConfig(kind="transformer", vocab_size=13, embedding=16, hidden=16,
                         layers=2, heads=2, feedforward=32, context=8, dropout=0.1,
                         tie_weights=True)
    return char_lm_class(mg)(config)


def _train_gpt(compiled: bool) -> tuple[list, list]:
    mg.manual_seed(0)
    model = _gpt()
    optimizer = optim.AdamW(model.parameters(), lr=3e-3)
    schedule = optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (step + 1))

    def train_step(ids, targets):
        optimizer.zero_grad()
        logits, _ = model(ids)
        loss = F.cross_entropy(logits.reshape(-1, 13), targets.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        return loss

    step = mg.compile(train_step) if compiled else train_step
    rng = np.random.default_rng(3)
    losses = []
    for _ in range(STEPS):
        text = mg.tensor(rng.integers(0, 13, (4, 9)))
        losses.append(step(text[:, :-1], text[:, 1:]).array.copy())
        schedule.step()  # the learning rate each replay reads from param_groups
    return losses, _state(model, optimizer)


def test_a_compiled_gpt_training_step_equals_the_eager_one():
    eager_losses, eager_state = _train_gpt(compiled=False)
    losses, state = _train_gpt(compiled=True)
    for got, want in zip(losses + state, eager_losses + eager_state, strict=True):
        assert_bits_equal(got, want)
    assert len(set(map(float, losses))) == STEPS


def _train_module(build, batches, optimizer_class, compiled: bool) -> tuple[list, list]:
    mg.manual_seed(0)
    model = build()
    forward = mg.compile(model) if compiled else model
    optimizer = optimizer_class(model.parameters())
    losses = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = F.cross_entropy(forward(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.array.copy())
    model.eval()
    with mg.no_grad():
        losses.append(forward(batches[0][0]).array.copy())
    return losses, _state(model, optimizer)


def _images(channels: int, size: int, classes: int) -> list:
    rng = np.random.default_rng(5)
    return [(mg.tensor(rng.standard_normal((6, channels, size, size)).astype(np.float32)),
             mg.tensor(rng.integers(0, classes, 6))) for _ in range(STEPS)]


@pytest.mark.parametrize("build, optimizer_class", [
    (lambda: build_model(mg), lambda p: optim.SGD(p, lr=0.1, momentum=0.9)),
    (lambda: nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                           nn.Flatten(), nn.Dropout(0.2), nn.Linear(4 * 8 * 8, 10)),
     lambda p: optim.Adam(p, lr=1e-2)),
], ids=["digits-cnn", "batchnorm"])
def test_a_compiled_module_trains_as_the_eager_one(build, optimizer_class):
    batches = _images(1, 8, 10)
    eager_losses, eager_state = _train_module(build, batches, optimizer_class, False)
    losses, state = _train_module(build, batches, optimizer_class, True)
    for got, want in zip(losses + state, eager_losses + eager_state, strict=True):
        assert_bits_equal(got, want)


def test_compiled_greedy_decoding_equals_eager():
    mg.manual_seed(0)
    model = _gpt()
    model.eval()
    forward = mg.compile(model)

    def decode(step_model, ids: list[int], steps: int) -> list[int]:
        for _ in range(steps):
            window = mg.tensor([ids[-8:]])  # the context: one shape once it is full
            with mg.no_grad():
                logits, _ = step_model(window)
            ids.append(int(logits.array[0, -1].argmax()))
        return ids

    prompt = [1, 2, 3, 4, 5, 6, 7, 8]
    assert decode(forward, list(prompt), 6) == decode(model, list(prompt), 6)
    assert forward._compiled_forward._plan_count == 1
