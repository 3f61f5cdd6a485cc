"""The generated replay function (minigrad/compile/codegen.py): it computes eager's bits,
its source names every step, it drops each slot where the plan frees it, and a guard
that fails inside it sends the call to eager."""
from __future__ import annotations

import gc
import tracemalloc
import weakref

import numpy as np
import pytest
from helpers import assert_bits_equal
from test_compile_models import _train_gpt
from training_steps import training_step

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn, optim


def _docs_step(compiled: bool):
    """docs/compile.md's walk-through step: Linear, ReLU, MSE, SGD."""
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    train_step = training_step(model, optimizer)
    return (mg.compile(train_step) if compiled else train_step), model


def _run_docs_step(compiled: bool, steps: int = 4) -> list:
    step, model = _docs_step(compiled)
    rng = np.random.default_rng(1)
    results = []
    for _ in range(steps):
        x = mg.tensor(rng.standard_normal((4, 3)).astype(np.float32))
        y = mg.tensor(rng.standard_normal((4, 2)).astype(np.float32))
        results.append(step(x, y).array.copy())
    results += [p.array.copy() for p in model.parameters()]
    results += [p.grad.array.copy() for p in model.parameters()]
    return results


@pytest.mark.filterwarnings("error:mg.compile")
def test_the_docs_step_replayed_by_the_generated_function_equals_eager():
    for got, want in zip(_run_docs_step(True), _run_docs_step(False), strict=True):
        assert_bits_equal(got, want)


@pytest.mark.filterwarnings("error:mg.compile")
def test_the_gpt_step_replayed_by_the_generated_function_equals_eager():
    eager_losses, eager_state = _train_gpt(compiled=False)
    losses, state = _train_gpt(compiled=True)
    for got, want in zip(losses + state, eager_losses + eager_state, strict=True):
        assert_bits_equal(got, want)


def test_the_printed_plan_shows_the_replay_function_with_every_step(monkeypatch, capsys):
    monkeypatch.setenv("MINIGRAD_DEBUG", "compile")
    step, _ = _docs_step(compiled=True)
    step(mg.randn(4, 3), mg.randn(4, 2))
    printed = capsys.readouterr().err
    (plan,) = step.plans()
    source = plan.replay.source
    assert source in printed.replace("\n    ", "\n")  # printed indented by four
    assert source.startswith("def replay(slots, buffers=()):")
    for index in range(len(plan.steps)):
        assert f"    # step {index}\n" in source
    assert "Addmm_forward(Addmm(), " in source
    assert "Optimizer_step(" in source
    assert ".grad = _wrap(s" in source
    assert "def output(slots):" in source


def _intermediate_freed_before_next_step(monkeypatch) -> bool:
    """Replay `exp(x * 2) * 3` summed, watching Exp's result: whether it is gone by the
    time the step after its last reader runs (the plan frees it after that reader)."""
    monkeypatch.setenv("MINIGRAD_COMPILE_FUSION", "0")  # one step per op
    compiled = mg.compile(lambda x: ((x * 2).exp() * 3).sum())
    x = mg.randn(256, 256)
    with mg.no_grad():
        compiled(x)
        (plan,) = compiled.plans()
        names = plan.replay.function.__globals__
        watched: list = []
        exp_forward, sum_forward = names["Exp_forward"], names["Sum_forward"]

        def watching_exp(node, *args, **kwargs):
            result = exp_forward(node, *args, **kwargs)
            watched.append(weakref.ref(result))
            return result

        seen_alive: list = []

        def checking_sum(node, *args, **kwargs):
            seen_alive.append(watched[-1]() is not None)
            return sum_forward(node, *args, **kwargs)

        monkeypatch.setitem(names, "Exp_forward", watching_exp)
        monkeypatch.setitem(names, "Sum_forward", checking_sum)
        assert_bits_equal(compiled(x).array, ((x * 2).exp() * 3).sum().array)
    return seen_alive == [False]


def test_an_intermediate_is_dropped_after_the_step_that_last_reads_it(monkeypatch):
    assert _intermediate_freed_before_next_step(monkeypatch)


@pytest.mark.filterwarnings("error:mg.compile")
def test_memory_does_not_grow_over_fifty_replays():
    step, _ = _docs_step(compiled=True)
    x, y = mg.randn(1024, 3), mg.randn(1024, 2)
    for _ in range(3):
        step(x, y)
    tracemalloc.start()
    try:
        step(x, y)
        gc.collect()  # the nodes of op forwards are collected as cycles, as eager's
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(50):
            step(x, y)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # less than one (1024, 2) float32 intermediate in all: a slot list or an array kept
    # per replay would pass that many times over
    assert grown < 1024 * 2 * 4


def test_a_guard_that_fails_in_the_replay_runs_the_call_eagerly_with_its_random_draws():
    def step(logits, targets):
        # cross-entropy counts the rows not ignored: a value read into Python (a guard)
        return F.cross_entropy(F.dropout(logits, 0.5), targets, ignore_index=0)

    compiled = mg.compile(step)
    logits = mg.randn(6, 4)
    few_ignored = mg.tensor(np.array([0, 1, 2, 3, 1, 2]))
    more_ignored = mg.tensor(np.array([0, 0, 0, 3, 1, 2]))
    results = {}
    for name, fn in (("eager", step), ("compiled", compiled)):
        mg.manual_seed(5)
        results[name] = [fn(logits, t).array.copy()
                         for t in (few_ignored, few_ignored, more_ignored, few_ignored)]
        results[name].append(mg.rand(3).array)  # the random stream after the calls
    for got, want in zip(results["compiled"], results["eager"], strict=True):
        assert_bits_equal(got, want)
    (plan,) = compiled.plans()
    assert "_guard_failed(" in plan.replay.source
