"""mg.Generator: a random number generator of one's own (PyTorch's torch.Generator), for
reproducible draws that do not disturb, and are not disturbed by, the default generators.

    g = mg.Generator().manual_seed(42)
    mg.randn(3, generator=g); mg.randperm(10, generator=g); probs.multinomial(1, generator=g)

It draws on the host with NumPy's PCG64 and copies the result to the GPU for GPU
tensors, so a seed gives the same numbers on both devices. Every function that takes
`generator=` draws through `source(generator)`: the Generator given, or the module
minigrad.random (the default generators). Both offer the same three draws.
"""
from __future__ import annotations

import numpy as np

from minigrad import random as _default
from minigrad.backend import as_device, to_device


class Generator:
    """A seeded stream of random numbers: `manual_seed`, `seed`, `initial_seed`,
    `get_state`, `set_state`, as in PyTorch. `device` is recorded for PyTorch code
    that names one; the draws are the same on every device."""

    def __init__(self, device="cpu"):
        self.device = as_device(device)
        self.manual_seed(67280421310721)  # PyTorch's default seed

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from `seed` (an integer >= 0); returns the generator."""
        seed = _seed_value(seed, "Generator.manual_seed")
        self._initial_seed = seed
        self._numpy = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the seed used."""
        seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed the stream last started from."""
        return self._initial_seed

    def get_state(self) -> dict:
        """The generator's position, a JSON-able dict that set_state restores."""
        return {"seed": self._initial_seed, "pcg64": self._numpy.bit_generator.state}

    def set_state(self, state: dict) -> Generator:
        """Return to a position get_state recorded; returns the generator."""
        if not isinstance(state, dict) or set(state) != {"seed", "pcg64"}:
            raise ValueError("Generator.set_state: expected a dict from Generator.get_state() "
                             f"with the keys 'seed' and 'pcg64', got {state!r:.200}")
        bit_generator = np.random.PCG64()
        try:
            bit_generator.state = state["pcg64"]
        except (TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"Generator.set_state: invalid 'pcg64' state: {exc!r}") from exc
        self._initial_seed = _seed_value(state["seed"], "Generator.set_state: seed")
        self._numpy = np.random.Generator(bit_generator)
        return self

    def __repr__(self) -> str:
        return f"minigrad.Generator(device='{self.device}', initial_seed={self._initial_seed})"

    # the draws minigrad.random offers too, with the same arguments
    def uniform(self, shape, low, high, dtype, device):
        draws = self._numpy.uniform(low, high, size=shape).astype(dtype.np, copy=False)
        return to_device(draws, as_device(device))

    def normal(self, shape, mean, std, dtype, device):
        draws = self._numpy.normal(mean, std, size=shape).astype(dtype.np, copy=False)
        return to_device(draws, as_device(device))

    def integers(self, low, high, shape, device):
        draws = self._numpy.integers(low, high, size=shape, dtype=np.int64)
        return to_device(draws, as_device(device))


def source(generator: Generator | None):
    """Where draws come from: `generator`, or the default generators when it is None."""
    if generator is None:
        return _default
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a minigrad.Generator, got "
                        f"{type(generator).__name__}")
    return generator


def _seed_value(seed, what: str) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{what}: the seed must be an integer >= 0, got {seed!r}")
    return int(seed)
