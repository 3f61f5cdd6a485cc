"""The random number generators: a NumPy Generator for the CPU and a cuRAND one (through
CuPy) for the GPU. `manual_seed` seeds both; `get_rng_state` and `set_rng_state` save and
restore both, so a resumed run draws exactly what the uninterrupted one drew.

CuPy cannot read a cuRAND generator's position back, so the GPU generator is keyed per
draw, the way PyTorch's CUDA generator keeps (seed, offset): draw k after seed s comes
from a Philox stream keyed by a hash of (s, k). Its whole state is those two integers.
"""
from __future__ import annotations

import math

import numpy as np

from minigrad.backend import require_cuda
from minigrad.kernels.bernoulli_mask import bernoulli_mask

_cpu = np.random.default_rng(0)


class _GpuGenerator:
    """CuPy's Philox generator, re-keyed for every draw from (seed, draws)."""

    def __init__(self, seed: int, draws: int = 0):
        self.seed = seed
        self.draws = draws
        self._random_state = None  # created on the first GPU draw

    def next_draw(self):
        """A cupy.random.RandomState positioned at the next draw."""
        cupy = require_cuda()
        if self._random_state is None:
            philox = cupy.cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10
            self._random_state = cupy.random.RandomState(method=philox)
        key = np.random.SeedSequence((self.seed, self.draws)).generate_state(1, np.uint64)
        self._random_state.seed(int(key[0]))
        self.draws += 1
        return self._random_state


_gpu = _GpuGenerator(0)


def manual_seed(seed: int) -> None:
    """Seed every generator minigrad uses (CPU and GPU); seeds are integers >= 0."""
    global _cpu, _gpu
    seed = _check_count(seed, "manual_seed: seed")
    _cpu = np.random.default_rng(seed)
    _gpu = _GpuGenerator(seed)


def get_rng_state() -> dict:
    """The state of both generators as a JSON-able dict (for checkpoints):
    {"cpu": NumPy's PCG64 state, "gpu": {"seed": s, "draws": k}}."""
    return {"cpu": _cpu.bit_generator.state, "gpu": {"seed": _gpu.seed, "draws": _gpu.draws}}


def set_rng_state(state: dict) -> None:
    """Restore what get_rng_state returned; ValueError naming the part that is wrong (and
    nothing restored). A bare PCG64 state (the CPU part alone) restores the CPU generator
    and leaves the GPU one as it is."""
    if not isinstance(state, dict):
        raise ValueError(f"set_rng_state: expected a dict with the keys 'cpu' and 'gpu', as "
                         f"get_rng_state() returns, got {type(state).__name__}")
    if "bit_generator" in state:
        state = {"cpu": state}
    unknown = set(state) - {"cpu", "gpu"}
    if unknown or "cpu" not in state:
        raise ValueError(f"set_rng_state: expected a dict with the keys 'cpu' and 'gpu', as "
                         f"get_rng_state() returns, got {sorted(map(str, state))}")
    cpu = _checked_cpu_state(state["cpu"])
    gpu = _checked_gpu_state(state["gpu"]) if "gpu" in state else None
    global _cpu, _gpu
    _cpu = np.random.Generator(cpu)
    if gpu is not None:
        _gpu = gpu


def _checked_cpu_state(state) -> np.random.PCG64:
    """A PCG64 bit generator set to `state`, or ValueError saying what is wrong (a
    checkpoint may carry a corrupt or hostile state)."""
    fields = {"bit_generator", "state", "has_uint32", "uinteger"}
    if not isinstance(state, dict) or set(state) != fields:
        raise ValueError(f"set_rng_state: the 'cpu' state: expected a dict with the keys "
                         f"{sorted(fields)}, as get_rng_state() returns, got {str(state)[:80]}")
    if type(state["bit_generator"]) is not str or state["bit_generator"] != "PCG64":
        raise ValueError(f"set_rng_state: the 'cpu' state is for a {state['bit_generator']!r} "
                         "generator, minigrad's is 'PCG64'")
    counters = state["state"]
    if not (isinstance(counters, dict) and set(counters) == {"state", "inc"}
            and all(_is_int_below(counters[k], 2**128) for k in counters)):
        raise ValueError(f"set_rng_state: the 'cpu' state: 'state' must hold 'state' and "
                         f"'inc', integers in [0, 2**128), got {str(counters)[:80]}")
    if not (_is_int_below(state["has_uint32"], 2) and _is_int_below(state["uinteger"], 2**32)):
        raise ValueError("set_rng_state: the 'cpu' state: 'has_uint32' must be 0 or 1 and "
                         "'uinteger' an "
                         f"integer in [0, 2**32), got {state['has_uint32']!r} and "
                         f"{state['uinteger']!r}")
    bit_generator = np.random.PCG64()
    bit_generator.state = state
    return bit_generator


def _is_int_below(value, bound: int) -> bool:
    return type(value) is int and 0 <= value < bound


def _checked_gpu_state(state) -> _GpuGenerator:
    if not isinstance(state, dict) or set(state) != {"seed", "draws"}:
        raise ValueError(f"set_rng_state: the 'gpu' state must be a dict with the keys "
                         f"'seed' and 'draws', got {state!r}")
    return _GpuGenerator(_check_count(state["seed"], "set_rng_state: 'gpu' seed"),
                         _check_count(state["draws"], "set_rng_state: 'gpu' draws"))


def _check_count(value, what: str) -> int:
    """An integer >= 0 (NumPy integers too; bools and floats are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{what} must be an integer >= 0, got {value!r}")
    return int(value)


def uniform(shape, low, high, dtype, device):
    """Uniform draws in [low, high) of `dtype` on `device`."""
    if str(device) == "cpu":
        if dtype.np in (np.float32, np.float64):
            # draw in the target dtype directly: no float64 temporary for float32
            draws = _cpu.random(size=shape, dtype=dtype.np)
            if low != 0.0 or high != 1.0:
                draws *= high - low
                draws += low
            return draws
        return _cpu.uniform(low, high, size=shape).astype(dtype.np, copy=False)
    draws = _gpu.next_draw().uniform(low, high, size=shape, dtype=_gpu_draw_dtype(dtype))
    return draws.astype(dtype.np, copy=False)


def bernoulli(shape, probability: float, device):
    """A boolean array, each element True with `probability` (at a resolution of 2^-32).
    On the CPU one 64-bit word of the generator keys a SplitMix64 stream that gives the
    mask's 32-bit words (kernels/bernoulli_mask.py): the generator advances by one word
    a mask, and the mask is a function of that word."""
    if str(device) != "cpu":
        draws = _gpu.next_draw().uniform(0.0, 1.0, size=shape, dtype=np.float32)
        return draws < probability
    key = int(_cpu.bit_generator.random_raw())
    threshold = min(round(probability * 2**32), 2**32 - 1)
    return bernoulli_mask(key, math.prod(shape), threshold).reshape(shape)


def normal(shape, mean, std, dtype, device):
    """Normal draws N(mean, std^2) of `dtype` on `device`."""
    if str(device) == "cpu" and dtype.np in (np.float32, np.float64):
        return _cpu.standard_normal(size=shape, dtype=dtype.np) * dtype.np.type(std) + mean
    if str(device) == "cpu":
        return (_cpu.standard_normal(size=shape) * std + mean).astype(dtype.np)
    draws = _gpu.next_draw().normal(mean, std, size=shape, dtype=_gpu_draw_dtype(dtype))
    return draws.astype(dtype.np, copy=False)


def integers(low, high, shape, device):
    """int64 draws uniform in [low, high) on `device`."""
    if str(device) == "cpu":
        return _cpu.integers(low, high, size=shape, dtype=np.int64)
    return _gpu.next_draw().randint(low, high, size=shape, dtype=np.int64)


def _gpu_draw_dtype(dtype) -> type:
    """cuRAND draws float32 or float64 only; float16 is drawn in float32 and cast."""
    return np.float64 if dtype.np == np.float64 else np.float32


def manual_seed_gpu(seed: int) -> None:
    """Seed the GPU generator alone (mg.cuda.manual_seed)."""
    global _gpu
    _gpu = _GpuGenerator(seed)
