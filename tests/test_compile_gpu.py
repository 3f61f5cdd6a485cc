"""mg.compile on GPU tensors: the capture records the CuPy calls ops make (`xp.<fn>` with
xp the cupy module, array operators and methods), the plan replays them on the device
bit for bit as the eager GPU run computes, and guards keep CPU and GPU plans apart.

GPU-only: skipped without CUDA, run on the CuPy stand-in in CI (MINIGRAD_FAKE_GPU=1).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import requires_cuda
from training_steps import training_step

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn, optim
from minigrad.compile.traced_device import RecordedFunction

pytestmark = [requires_cuda, pytest.mark.filterwarnings("error:mg.compile")]


def _model(device: str) -> nn.Module:
    mg.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16),
                         nn.Linear(16, 4)).to(device)


def _batches(device: str, count: int = 4) -> list:
    rng = np.random.default_rng(7)
    return [(mg.tensor(rng.standard_normal((5, 6)).astype(np.float32), device=device),
             mg.tensor(rng.integers(0, 4, 5), device=device)) for _ in range(count)]


def _train(device: str, compiled: bool):
    model = _model(device)
    opt = optim.AdamW(model.parameters(), lr=3e-2)
    step = training_step(model, opt, F.cross_entropy)
    run = mg.compile(step) if compiled else step
    losses = [run(x, y).numpy().copy() for x, y in _batches(device)]
    return losses, [p.numpy().copy() for p in model.parameters()], run


def test_a_compiled_gpu_training_step_equals_the_eager_gpu_run_bit_for_bit():
    eager_losses, eager_params, _ = _train("cuda", compiled=False)
    losses, params, step = _train("cuda", compiled=True)
    # one plan for every step: zero_grad reads no gradient, and the optimizer (making its
    assert len(step.plans()) == 1  # state at the first step) runs as Python at each replay
    for got, want in zip(losses + params, eager_losses + eager_params, strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert not all(np.array_equal(a, b) for a, b in zip(eager_losses, eager_losses[1:]))


def test_a_gpu_plan_describes_its_external_device_arrays():
    model = _model("cuda")
    forward = mg.compile(model)
    x = _batches("cuda", 1)[0][0]
    with mg.no_grad():
        forward(x)
    text = forward._compiled_forward.plans()[0].describe()
    assert "external array of a tensor (5, 6) float32" in text


def test_compiled_inference_on_the_gpu_under_no_grad():
    model = _model("cuda")
    forward = mg.compile(model)
    for x, _ in _batches("cuda", 3):
        with mg.no_grad():
            got = forward(x)
            want = model(x)
        assert got.device == "cuda" and got.grad_fn is None
        assert np.array_equal(got.numpy(), want.numpy())
    assert len(forward._compiled_forward.plans()) == 1


def test_a_cpu_call_and_a_gpu_call_get_separate_plans():
    def affine(x, w):
        return (x @ w).tanh() * 2.0 + x.sum()

    compiled = mg.compile(affine)
    rng = np.random.default_rng(3)
    x_host = rng.standard_normal((3, 3)).astype(np.float32)
    w_host = rng.standard_normal((3, 3)).astype(np.float32)
    for device in ("cpu", "cuda", "cpu", "cuda"):
        x, w = mg.tensor(x_host, device=device), mg.tensor(w_host, device=device)
        got = compiled(x, w)
        assert got.device == device
        assert np.array_equal(got.numpy(), affine(x, w).numpy())
    assert len(compiled.plans()) == 2


def test_a_parameter_moved_to_the_gpu_makes_a_new_plan():
    model = nn.Linear(3, 2)
    doubled = mg.compile(lambda: model.weight.detach() * 2.0)
    with mg.no_grad():
        on_cpu = doubled()
        model.to("cuda")
        on_gpu = doubled()
    assert on_cpu.device == "cpu" and on_gpu.device == "cuda"
    assert np.array_equal(on_gpu.numpy(), on_cpu.numpy())
    assert len(doubled.plans()) == 2


def test_a_copy_to_the_host_inside_the_step_is_refused_with_the_reason():
    def to_host(x):
        return mg.tensor(x.array.get() * 2.0)

    compiled = mg.compile(to_host)
    x = mg.tensor([1.0, 2.0], device="cuda")
    with pytest.warns(RuntimeWarning, match=r"cupy.ndarray.get\(\) of a captured value"):
        got = compiled(x)
    assert np.array_equal(got.numpy(), [2.0, 4.0])


def test_the_cupy_module_is_patched_only_while_a_capture_runs(gpu_or_stand_in):
    cupy = gpu_or_stand_in
    seen = {}

    def step(x):
        seen["exp"] = cupy.exp
        return x.exp() + 1.0

    compiled = mg.compile(step)
    compiled(mg.tensor([0.5, 1.5], device="cuda"))
    assert isinstance(seen["exp"], RecordedFunction)
    assert not isinstance(cupy.exp, RecordedFunction)
    assert not isinstance(cupy.ones_like, RecordedFunction)


def test_a_raw_cupy_call_in_the_step_is_recorded_and_replayed(gpu_or_stand_in):
    cupy = gpu_or_stand_in

    def scaled(x):
        return mg.Tensor(cupy.multiply(x.array, 3.0) + cupy.ones_like(x.array))

    compiled = mg.compile(scaled)
    for values in ([1.0, 2.0], [4.0, -1.0], [0.25, 8.0]):
        x = mg.tensor(values, device="cuda")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = compiled(x)
        assert np.array_equal(got.numpy(), np.asarray(values, np.float32) * 3.0 + 1.0)
    assert len(compiled.plans()) == 1
    assert "multiply" in compiled.plans()[0].describe()
