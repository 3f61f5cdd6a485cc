"""Shared pytest configuration.

`--device cpu|gpu` (or MINIGRAD_TEST_DEVICE=cpu|gpu in the environment) chooses where the
op tests create their tensors (tests/helpers.make_tensor). Tests marked `device` are the
ones that follow the switch; with gpu asked for and no CUDA they are skipped, with the
reason, and every other test still runs on the CPU.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from helpers import DEVICE_ENV, test_device

import minigrad as mg
from minigrad.autograd.grad_mode import MODES


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        action="store",
        default=None,
        choices=("cpu", "gpu", "cuda"),
        help=f"device for op tests (sets {DEVICE_ENV}; default cpu)",
    )


def pytest_configure(config):
    option = config.getoption("--device")
    if option is not None:
        os.environ[DEVICE_ENV] = option
    if test_device() not in ("cpu", "gpu"):
        raise pytest.UsageError(
            f"{DEVICE_ENV}={os.environ.get(DEVICE_ENV)!r}: expected 'cpu' or 'gpu'"
        )
    config.addinivalue_line(
        "markers", f"device: the test creates its tensors on {DEVICE_ENV} (cpu or gpu)"
    )


def pytest_report_header(config):
    return f"minigrad op tests on device: {test_device()}"


def pytest_collection_modifyitems(config, items):
    if test_device() != "gpu" or mg.backend.is_cuda_available():
        return
    skip = pytest.mark.skip(
        reason=f"{DEVICE_ENV}=gpu but CUDA is not available (CuPy missing or no GPU)"
    )
    for item in items:
        if item.get_closest_marker("device") is not None:
            item.add_marker(skip)


@pytest.fixture
def without_cuda(monkeypatch):
    """The process as on a machine without CUDA: the CuPy stand-in is switched off for
    the test, so the test runs under MINIGRAD_FAKE_GPU=1 too; skipped where a real GPU
    is usable. (CUDA is probed once per process: the probe is redone on both sides.)"""
    probe = mg.backend.device._probe_cuda
    monkeypatch.delenv(mg.backend.device.FAKE_GPU_ENV, raising=False)
    probe.cache_clear()
    try:
        if mg.cuda.is_available():
            pytest.skip("CUDA is available here")
        yield
    finally:
        probe.cache_clear()


@pytest.fixture
def gpu_or_stand_in(monkeypatch):
    """A GPU in this process for the test: the real one where CUDA is usable, else the
    CuPy stand-in switched on; yields its array module (cupy or the stand-in)."""
    probe = mg.backend.device._probe_cuda
    if not mg.cuda.is_available():
        monkeypatch.setenv(mg.backend.device.FAKE_GPU_ENV, "1")
        probe.cache_clear()
    try:
        yield mg.backend.cupy_or_none()
    finally:
        probe.cache_clear()


@pytest.fixture
def rng():
    """A seeded NumPy generator, fresh per test."""
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _restore_grad_mode():
    """A test that fails inside no_grad must not leave grad mode off for the next one."""
    yield
    MODES.grad_enabled = True
    MODES.anomaly = False


