"""Fetching one batch: from a map-style dataset by the indices the sampler chose, or the
next samples of an IterableDataset. The DataLoader fetches in its own process, or each
worker process does with its own copy of a `FetchSpec`."""
from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from minigrad.utils.data.dataset import IterableDataset


@dataclass(frozen=True)
class FetchSpec:
    """What fetching needs to know of a DataLoader (sent to each worker process).
    `auto_collation`: samples are gathered into batches by collate_fn, rather than each
    sample passed to it alone."""

    dataset: object
    auto_collation: bool
    collate_fn: Callable
    batch_size: int | None
    drop_last: bool

    @property
    def is_stream(self) -> bool:
        return isinstance(self.dataset, IterableDataset)

    def fetcher(self) -> MapFetcher | StreamFetcher:
        """A fetcher for one pass (a fresh iterator of an IterableDataset)."""
        return StreamFetcher(self) if self.is_stream else MapFetcher(self)


class MapFetcher:
    """`fetch(indices)`: the collated samples at a list of indices (or, without
    auto-collation, the sample at one index, converted)."""

    def __init__(self, spec: FetchSpec):
        self.spec = spec

    def fetch(self, indices):
        dataset, collate_fn = self.spec.dataset, self.spec.collate_fn
        if self.spec.auto_collation:
            return collate_fn([dataset[index] for index in indices])
        return collate_fn(dataset[indices])


class StreamFetcher:
    """`fetch()`: the next batch_size samples of the stream, collated (or, without
    auto-collation, the next sample, converted); StopIteration once the stream is spent
    (with drop_last, once fewer than batch_size samples are left). It takes `indices`
    only to be called as a MapFetcher is: a stream has none."""

    def __init__(self, spec: FetchSpec):
        self.spec = spec
        self.samples = iter(spec.dataset)

    def fetch(self, indices=None):
        spec = self.spec
        if not spec.auto_collation:
            return spec.collate_fn(next(self.samples))
        batch = list(itertools.islice(self.samples, spec.batch_size))
        if not batch or (spec.drop_last and len(batch) < spec.batch_size):
            raise StopIteration
        return spec.collate_fn(batch)
