"""DataLoader: batches of a dataset, in the order of a sampler (torch.utils.data's)."""
from __future__ import annotations

from collections.abc import Callable, Iterator

from minigrad.utils.data.collate import default_collate, default_convert
from minigrad.utils.data.dataset import IterableDataset
from minigrad.utils.data.generator import Generator
from minigrad.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class DataLoader:
    """Iterate over `dataset` in batches: `for x, y in DataLoader(data, batch_size=32,
    shuffle=True, generator=0): ...`.

    - `shuffle=True` draws a new order each epoch from `generator` (a numpy Generator, an
      int seed, or None for minigrad's global generator); `sampler` gives the order
      instead (a DistributedSampler for data-parallel training), `batch_sampler` whole
      batches of indices.
    - `drop_last=True` drops the last, shorter batch; `batch_size=None` turns batching
      off (each sample is only converted: NumPy arrays become tensors).
    - `collate_fn(list_of_samples)` builds a batch (default: `default_collate`).
    - Batches are loaded in the calling process: `num_workers` must be 0, and
      `pin_memory` has no effect (batches are host arrays, moved by `.to(device)`).

    An IterableDataset is batched in the order it yields; it takes no sampler or shuffle.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Sampler | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None,
                 pin_memory: bool = False, drop_last: bool = False,
                 generator: Generator = None):
        if num_workers != 0:
            raise ValueError(f"DataLoader: num_workers={num_workers}: minigrad loads batches "
                             "in the calling process; pass num_workers=0")
        if isinstance(dataset, IterableDataset):
            if shuffle:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected no sampler or "
                                 "batch_sampler; the dataset's own order is used")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive "
                                 "with batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and "
                             "is mutually exclusive with drop_last")
        if sampler is None and not isinstance(dataset, IterableDataset):
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and sampler is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.pin_memory, self.generator = num_workers, pin_memory, generator
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if self._auto_collation else default_convert)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (
            isinstance(self.dataset, IterableDataset) and self.batch_size is not None)

    def __iter__(self) -> Iterator:
        if isinstance(self.dataset, IterableDataset):
            yield from self._iterate_stream()
        elif self.batch_sampler is not None:
            for indices in self.batch_sampler:
                yield self.collate_fn([self.dataset[index] for index in indices])
        else:
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])

    def _iterate_stream(self) -> Iterator:
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            size = len(self.dataset)  # a TypeError when the stream has no length
            if self.batch_size is None:
                return size
            return size // self.batch_size if self.drop_last else -(-size // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
