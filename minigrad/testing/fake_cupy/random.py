"""cupy.random in the stand-in, with CuPy's API and rules (cupy/random/_generator.py):

- the legacy `RandomState` (what the module functions use) and the global state per
  device (`seed`, `get_random_state`, `set_random_state`; the first use reads CUPY_SEED);
- draws are device arrays, 0-d for `size=None`, never host scalars;
- float draws only in float32 or float64 (TypeError otherwise, as CuPy);
- `default_rng` with the Generator API (`random`, `standard_normal`, `integers`, `uniform`).

A (seed, generator type) pair gives the same stream on every run, as cuRAND does; the
numbers are NumPy's, not cuRAND's. Each draw is a `random_draw`: during a stream capture
the generator advances once and every launch of the graph writes the numbers drawn then.
"""
from __future__ import annotations

import os

import numpy as np

from minigrad.testing.fake_cupy._array import adopt, ndarray
from minigrad.testing.fake_cupy._capture import random_draw
from minigrad.testing.fake_cupy.cuda import curand

_UINT64_LIMIT = 2**64


def _float_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.char not in "fd":
        raise TypeError("cupy.random only supports float32 and float64")
    return dtype


def _shape(size) -> tuple:
    if size is None:
        return ()
    return (int(size),) if np.ndim(size) == 0 else tuple(int(n) for n in size)


def _scalar(value, name: str) -> float:
    if isinstance(value, ndarray) or isinstance(value, np.ndarray):
        raise NotImplementedError(f"the CuPy stand-in takes a scalar {name} only")
    return value


class RandomState:
    """cupy.random.RandomState: one cuRAND generator of type `method`."""

    def __init__(self, seed=None, method=None):
        self.method = curand.CURAND_RNG_PSEUDO_DEFAULT if method is None else method
        if self.method not in curand.PSEUDO_METHODS:
            raise ValueError(f"unknown cuRAND pseudo-random generator type {method}")
        self.seed(seed)

    def seed(self, seed=None) -> None:
        """Restart the stream: an int in [0, 2**64) (None: from os.urandom)."""
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        else:
            seed_array = np.asarray(seed)
            if seed_array.dtype.kind not in "biu":
                raise TypeError("Seed must be an integer.")
            seed = int(seed_array)
            if not 0 <= seed < _UINT64_LIMIT:
                raise ValueError("Seed must be an integer between 0 and 2**64 - 1")
        self._numbers = np.random.Generator(np.random.PCG64([seed, self.method]))

    @random_draw
    def random_sample(self, size=None, dtype=float) -> ndarray:
        return adopt(np.asarray(self._numbers.random(_shape(size), _float_dtype(dtype))))

    def rand(self, *size, dtype=float) -> ndarray:
        return self.random_sample(size, dtype)

    @random_draw
    def uniform(self, low=0.0, high=1.0, size=None, dtype=float) -> ndarray:
        low, high = _scalar(low, "low"), _scalar(high, "high")
        draws = self.random_sample(size, dtype)
        return adopt(draws.dtype.type(low) + draws._host * draws.dtype.type(high - low))

    @random_draw
    def normal(self, loc=0.0, scale=1.0, size=None, dtype=float) -> ndarray:
        loc, scale = _scalar(loc, "loc"), _scalar(scale, "scale")
        dtype = _float_dtype(dtype)
        draws = self._numbers.standard_normal(_shape(size), dtype)
        return adopt(np.asarray(draws * dtype.type(scale) + dtype.type(loc)))

    def standard_normal(self, size=None, dtype=float) -> ndarray:
        return self.normal(size=size, dtype=dtype)

    def randn(self, *size, dtype=float) -> ndarray:
        return self.normal(size=size, dtype=dtype)

    @random_draw
    def randint(self, low, high=None, size=None, dtype=int) -> ndarray:
        low, high = (0, low) if high is None else (low, high)
        if _scalar(low, "low") >= _scalar(high, "high"):
            raise ValueError("low >= high")
        draws = self._numbers.integers(low, high, _shape(size), dtype=np.int64)
        return adopt(np.asarray(draws).astype(dtype, copy=False))

    @random_draw
    def permutation(self, num) -> ndarray:
        if not isinstance(num, (int, np.integer)):
            raise NotImplementedError("the CuPy stand-in permutes range(n) only")
        return adopt(self._numbers.permutation(num))

    def shuffle(self, a: ndarray) -> None:
        if type(a) is not ndarray:
            raise TypeError("The array must be cupy.ndarray")
        a[...] = a[self.permutation(len(a))]  # NumPy's shuffle draws this permutation


def seed(seed=None) -> None:
    """Restart the global generator of the current device."""
    get_random_state().seed(seed)


_states: dict[int, RandomState] = {}


def get_random_state() -> RandomState:
    """The global RandomState of the current device (seeded from CUPY_SEED if set)."""
    state = _states.get(0)
    if state is None:
        env_seed = os.getenv("CUPY_SEED")
        state = _states.setdefault(0, RandomState(None if env_seed is None else int(env_seed)))
    return state


def set_random_state(rs: RandomState) -> None:
    if not isinstance(rs, RandomState):
        raise TypeError(f"Random state must be an instance of RandomState. Actual: {type(rs)}")
    _states[0] = rs


def reset_states() -> None:
    _states.clear()


def random_sample(size=None, dtype=float) -> ndarray:
    return get_random_state().random_sample(size, dtype)


random = random_sample


def rand(*size, dtype=float) -> ndarray:
    return get_random_state().rand(*size, dtype=dtype)


def randn(*size, dtype=float) -> ndarray:
    return get_random_state().randn(*size, dtype=dtype)


def uniform(low=0.0, high=1.0, size=None, dtype=float) -> ndarray:
    return get_random_state().uniform(low, high, size, dtype)


def normal(loc=0.0, scale=1.0, size=None, dtype=float) -> ndarray:
    return get_random_state().normal(loc, scale, size, dtype)


def standard_normal(size=None, dtype=float) -> ndarray:
    return get_random_state().standard_normal(size, dtype)


def randint(low, high=None, size=None, dtype=int) -> ndarray:
    return get_random_state().randint(low, high, size, dtype)


def permutation(num) -> ndarray:
    return get_random_state().permutation(num)


def shuffle(a: ndarray) -> None:
    get_random_state().shuffle(a)


class Generator:
    """cupy.random.Generator (the API of numpy.random.Generator, on the device)."""

    def __init__(self, bit_generator):
        self.bit_generator = bit_generator
        self._numbers = np.random.Generator(np.random.PCG64(bit_generator.seed_sequence))

    def random(self, size=None, dtype=np.float64, out=None) -> ndarray:
        return _into(self._draw("random", _shape(size), _float_dtype(dtype)), out)

    def standard_normal(self, size=None, dtype=np.float64, out=None) -> ndarray:
        return _into(self._draw("standard_normal", _shape(size), _float_dtype(dtype)), out)

    @random_draw
    def _draw(self, method: str, shape: tuple, dtype: np.dtype) -> ndarray:
        return adopt(np.asarray(getattr(self._numbers, method)(shape, dtype)))

    @random_draw
    def uniform(self, low=0.0, high=1.0, size=None, dtype=np.float64) -> ndarray:
        draws = self._numbers.random(_shape(size), _float_dtype(dtype))
        return adopt(np.asarray(draws * draws.dtype.type(high - low) + draws.dtype.type(low)))

    @random_draw
    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False) -> ndarray:
        draws = self._numbers.integers(low, high, _shape(size), dtype=dtype, endpoint=endpoint)
        return adopt(np.asarray(draws))


def _into(draws: ndarray, out):
    """The draws, or `out` holding them (a copy on the device, after the draw)."""
    if out is None:
        return draws
    out[...] = draws
    return out


class XORWOW:
    """cupy.random.XORWOW, the default bit generator (seeded through a SeedSequence)."""

    def __init__(self, seed=None):
        self.seed_sequence = (seed if isinstance(seed, np.random.SeedSequence)
                              else np.random.SeedSequence(seed))


def default_rng(seed=None) -> Generator:
    """A Generator on XORWOW (CuPy's default)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed if isinstance(seed, XORWOW) else XORWOW(seed))
