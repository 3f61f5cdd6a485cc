"""The random number generators: one NumPy Generator for the CPU and, when CUDA is
available, CuPy's generator for the GPU. `manual_seed` seeds both."""
from __future__ import annotations

import numpy as np

from minigrad.backend import cupy_or_none

_cpu = np.random.default_rng(0)


def manual_seed(seed: int) -> None:
    """Seed every generator minigrad uses (CPU and GPU)."""
    global _cpu
    _cpu = np.random.default_rng(seed)
    cupy = cupy_or_none()
    if cupy is not None:
        cupy.random.seed(seed)


def get_rng_state() -> dict:
    """The CPU generator's state as a JSON-able dict (for checkpoints)."""
    return _cpu.bit_generator.state


def set_rng_state(state: dict) -> None:
    _cpu.bit_generator.state = state


def generator(device) -> object:
    """The generator for a device: numpy.random.Generator or cupy.random."""
    if str(device) == "cpu":
        return _cpu
    return cupy_or_none().random


def uniform(shape, low, high, dtype, device):
    if str(device) == "cpu":
        if dtype.np in (np.float32, np.float64):
            # draw in the target dtype directly: no float64 temporary for float32
            draws = _cpu.random(size=shape, dtype=dtype.np)
            if low != 0.0 or high != 1.0:
                draws *= high - low
                draws += low
            return draws
        return _cpu.uniform(low, high, size=shape).astype(dtype.np, copy=False)
    return generator(device).uniform(low, high, size=shape).astype(dtype.np, copy=False)


def normal(shape, mean, std, dtype, device):
    if str(device) == "cpu" and dtype.np in (np.float32, np.float64):
        return _cpu.standard_normal(size=shape, dtype=dtype.np) * dtype.np.type(std) + mean
    return (generator(device).standard_normal(size=shape) * std + mean).astype(dtype.np)


def integers(low, high, shape, device):
    if str(device) == "cpu":
        return _cpu.integers(low, high, size=shape, dtype=np.int64)
    return generator(device).randint(low, high, size=shape, dtype=np.int64)


def uniform_like(t, low: float, high: float):
    return uniform(t.shape, low, high, t.dtype, t.device)


def normal_like(t, mean: float, std: float):
    return normal(t.shape, mean, std, t.dtype, t.device)


def manual_seed_gpu(seed: int) -> None:
    """Seed the GPU generator alone (mg.cuda.manual_seed); nothing to seed without CUDA."""
    cupy = cupy_or_none()
    if cupy is not None:
        cupy.random.seed(seed)
