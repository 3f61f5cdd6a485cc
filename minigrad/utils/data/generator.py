"""The one place that decides what a `generator=` argument of the data utilities may be.

As in PyTorch, a generator is an `mg.Generator` (its stream is used as given, so
successive epochs continue it). A `numpy.random.Generator` works the same way, and an int
seed makes a new NumPy generator kept by the object that took it. With None, each use
draws a fresh seed from minigrad's global CPU generator, so `mg.manual_seed` makes
shuffles repeatable, as torch.manual_seed does for PyTorch's.
"""
from __future__ import annotations

import numbers

import numpy as np

from minigrad import random as global_random
from minigrad.generator import Generator as MinigradGenerator

Generator = MinigradGenerator | np.random.Generator | int | None


def as_numpy_generator(generator: Generator, owner: str) -> np.random.Generator | None:
    """The NumPy generator behind `generator` (None stays None: see `resolve`)."""
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, MinigradGenerator):
        return generator.numpy_generator
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    raise TypeError(f"{owner}: generator must be a minigrad.Generator, a "
                    f"numpy.random.Generator, an int seed or None, got "
                    f"{type(generator).__name__}")


def resolve(generator: np.random.Generator | None) -> np.random.Generator:
    """`generator` itself, or for None a new one seeded from minigrad's global generator."""
    if generator is not None:
        return generator
    return np.random.default_rng(draw_seed(None))


def draw_seed(generator: np.random.Generator | None) -> int:
    """A seed in [0, 2**63 - 1) drawn from `generator`, or for None from minigrad's global
    CPU generator (a DataLoader draws its workers' base seed so, as PyTorch's does)."""
    if generator is None:
        return int(global_random.integers(0, 2**63 - 1, (), "cpu"))
    return int(generator.integers(0, 2**63 - 1))
