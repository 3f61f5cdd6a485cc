"""Samplers draw as they are consumed: an "endless" RandomSampler (num_samples=10**10, as
programs use for an infinite loader) starts at once, in memory that does not grow with
num_samples, and gives the indices a single draw would."""
from __future__ import annotations

import itertools
import time
import tracemalloc

import numpy as np
import pytest

from minigrad.utils.data import DataLoader, RandomSampler

MEMORY_LIMIT = 4 * 2**20  # bytes; one draw of 10**7 int64 indices alone takes 80 MB


def _first(iterable, count: int) -> list:
    return list(itertools.islice(iterable, count))


def _peak_while_taking(sampler, count: int) -> tuple[list, int]:
    """The first `count` indices of a pass and the peak memory traced while drawing them."""
    tracemalloc.start()
    try:
        indices = _first(sampler, count)
        return indices, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("num_samples", [10**7, 10**10])
def test_the_first_indices_of_a_huge_sampler_take_little_memory_and_time(replacement,
                                                                          num_samples):
    sampler = RandomSampler(range(50), replacement=replacement, num_samples=num_samples,
                            generator=0)
    assert len(sampler) == num_samples
    start = time.perf_counter()
    indices, peak = _peak_while_taking(sampler, 1000)
    assert time.perf_counter() - start < 2.0
    assert peak < MEMORY_LIMIT, f"{peak / 2**20:.1f} MiB"
    assert len(indices) == 1000 and set(indices) <= set(range(50))


@pytest.mark.parametrize("num_samples", [1, 31, 32, 33, 1000])
def test_draws_with_replacement_are_those_of_one_draw_of_num_samples(num_samples):
    """Drawing 32 at a time continues one stream: the same seed gives the indices it gave
    when all were drawn at once (and so resumed runs keep their order)."""
    sampler = RandomSampler(range(10), replacement=True, num_samples=num_samples, generator=3)
    expected = np.random.default_rng(3).integers(0, 10, num_samples).tolist()
    assert list(sampler) == expected


def test_an_endless_loader_gives_its_first_batches_at_once():
    sampler = RandomSampler(range(100), replacement=True, num_samples=10**10, generator=1)
    loader = DataLoader(np.arange(100.0), batch_size=8, sampler=sampler)
    assert len(loader) == 10**10 // 8
    start = time.perf_counter()
    batches = _first(loader, 3)
    assert time.perf_counter() - start < 2.0
    expected = np.random.default_rng(1).integers(0, 100, 24).reshape(3, 8)
    assert [batch.tolist() for batch in batches] == expected.astype(float).tolist()
