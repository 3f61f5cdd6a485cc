"""The one place that decides what a `generator=` argument of the data utilities may be.

PyTorch passes a torch.Generator. Here a generator is a `numpy.random.Generator` (used
as given, so successive epochs continue its stream), an int seed (a new NumPy generator
seeded with it, kept by the object that took it), or None: then each use draws a fresh
seed from minigrad's global CPU generator, so `mg.manual_seed` makes shuffles repeatable,
as torch.manual_seed does for PyTorch's.
"""
from __future__ import annotations

import numbers

import numpy as np

from minigrad import random as global_random

Generator = np.random.Generator | int | None


def as_numpy_generator(generator: Generator, owner: str) -> np.random.Generator | None:
    """The NumPy generator behind `generator` (None stays None: see `resolve`)."""
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return np.random.default_rng(int(generator))
    raise TypeError(f"{owner}: generator must be a numpy.random.Generator, an int seed or "
                    f"None, got {type(generator).__name__}")


def resolve(generator: np.random.Generator | None) -> np.random.Generator:
    """`generator` itself, or for None a new one seeded from minigrad's global generator."""
    if generator is not None:
        return generator
    seed = int(global_random.generator("cpu").integers(0, 2**63 - 1))
    return np.random.default_rng(seed)
