"""DataLoader: batches of a dataset, in the order of a sampler (torch.utils.data's)."""
from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator

from minigrad.utils.data.collate import default_collate, default_convert
from minigrad.utils.data.dataset import IterableDataset
from minigrad.utils.data.fetch import FetchSpec
from minigrad.utils.data.generator import Generator, as_numpy_generator, draw_seed
from minigrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    check_batching,
    is_int,
)
from minigrad.utils.data.worker import WorkerJob
from minigrad.utils.data.worker_pool import WorkerPoolIterator


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
    - `num_workers=N > 0` loads batches in N worker processes (see worker.py and
      worker_pool.py), with the same batches in the same order as num_workers=0: the
      sampler is drawn in the main process and the workers fetch its indices in turn.
      `worker_init_fn(worker_id)` runs first in each; `get_worker_info()` tells dataset
      code which worker it runs in (an IterableDataset shards its stream by it).
      `prefetch_factor` batches per worker are requested ahead (default 2);
      `persistent_workers=True` keeps the workers from one epoch to the next; `timeout`
      (seconds, 0 for none) bounds the wait for a batch; `multiprocessing_context` is a
      start method ("fork", "spawn", "forkserver") or a context (default: the
      platform's). An exception in a worker is raised again here, naming the worker.
    - Each pass draws one seed from `generator` (for None, the global generator), as
      PyTorch's does whatever num_workers is; worker k is seeded with seed + k.
    - `pin_memory` and `pin_memory_device` have no effect: batches are host arrays,
      moved by `.to(device)`.

    An IterableDataset is batched in the order it yields; it takes no sampler or shuffle.
    With workers, each worker iterates its own copy of it.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Sampler | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable | None = None, multiprocessing_context=None,
                 generator: Generator = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = ""):
        prefetch_factor = _check_workers(num_workers, timeout, prefetch_factor,
                                         persistent_workers, worker_init_fn)
        self.multiprocessing_context = _as_context(multiprocessing_context, num_workers)
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
        elif batch_size is None:
            if drop_last:
                raise ValueError("DataLoader: batch_size=None option disables auto-batching "
                                 "and is mutually exclusive with drop_last")
        else:  # here, not in BatchSampler alone: a stream is batched without one
            check_batching("DataLoader", batch_size, drop_last)
        # one stream for the shuffle and the workers' seeds, as PyTorch's shared generator
        self._numpy_generator = as_numpy_generator(generator, "DataLoader")
        if sampler is None and not isinstance(dataset, IterableDataset):
            sampler = (RandomSampler(dataset, generator=self._numpy_generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and sampler is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.generator = num_workers, generator
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.timeout, self.worker_init_fn = timeout, worker_init_fn
        self.prefetch_factor, self.persistent_workers = prefetch_factor, persistent_workers
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if self._auto_collation else default_convert)
        self._persistent_iterator = None  # the persistent workers, from the first epoch on

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (
            isinstance(self.dataset, IterableDataset) and self.batch_size is not None)

    @property
    def _index_sampler(self):
        """What the sampler side yields per batch: lists of indices, or single indices."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def _fetch_spec(self) -> FetchSpec:
        return FetchSpec(self.dataset, self._auto_collation, self.collate_fn,
                         self.batch_size, self.drop_last)

    def __iter__(self) -> Iterator:
        base_seed = draw_seed(self._numpy_generator)  # drawn whatever num_workers is
        if self.num_workers == 0:
            return self._batches_in_this_process()
        if self._persistent_iterator is not None and not self._persistent_iterator.closed:
            self._persistent_iterator.reset()  # the workers keep their first epoch's seeds
            return self._persistent_iterator
        job = WorkerJob(self._fetch_spec(), self.num_workers, base_seed, self.worker_init_fn)
        context = self.multiprocessing_context or multiprocessing.get_context()
        workers = WorkerPoolIterator(job, self._index_sampler, context, self.prefetch_factor,
                                     self.timeout, self.persistent_workers)
        if self.persistent_workers:
            self._persistent_iterator = workers
        return workers

    def _batches_in_this_process(self) -> Iterator:
        fetcher = self._fetch_spec().fetcher()
        if isinstance(self.dataset, IterableDataset):
            while True:
                try:
                    batch = fetcher.fetch()
                except StopIteration:
                    return
                yield batch
        for indices in self._index_sampler:
            yield fetcher.fetch(indices)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            size = len(self.dataset)  # a TypeError when the stream has no length
            if self.batch_size is None:
                return size
            return size // self.batch_size if self.drop_last else -(-size // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)


def _check_workers(num_workers, timeout, prefetch_factor, persistent_workers,
                   worker_init_fn) -> int | None:
    """PyTorch's checks of the worker options; returns prefetch_factor (2 by default with
    workers, None without)."""
    if not is_int(num_workers) or num_workers < 0:
        raise ValueError("DataLoader: num_workers option should be non-negative; use "
                         f"num_workers=0 to disable multiprocessing (got {num_workers!r})")
    if not timeout >= 0:
        raise ValueError(f"DataLoader: timeout option should be non-negative, got {timeout!r}")
    if timeout > 0 and num_workers == 0:  # PyTorch fails only when iteration starts
        raise ValueError(f"DataLoader: timeout={timeout} bounds the wait for worker "
                         "processes and needs num_workers > 0")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                         "multiprocessing: let num_workers > 0 to enable multiprocessing, "
                         "otherwise set prefetch_factor to None")
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    if prefetch_factor is not None and (not is_int(prefetch_factor) or prefetch_factor < 1):
        raise ValueError("DataLoader: prefetch_factor option should be a positive integer, "
                         f"got {prefetch_factor!r}")
    if persistent_workers and num_workers == 0:
        raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
    if worker_init_fn is not None and not callable(worker_init_fn):
        raise TypeError(f"DataLoader: worker_init_fn must be callable or None, got "
                        f"{type(worker_init_fn).__name__}")
    return prefetch_factor


def _as_context(context, num_workers: int):
    """A multiprocessing context from a start method's name or a context (None stays
    None: the platform's default is taken when the workers start)."""
    if context is None:
        return None
    if num_workers == 0:
        raise ValueError("DataLoader: multiprocessing_context can only be used with "
                         "multi-process loading (num_workers > 0), but got num_workers=0")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"DataLoader: multiprocessing_context option should specify a "
                             f"valid start method in {methods!r}, but got "
                             f"multiprocessing_context={context!r}")
        return multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("DataLoader: multiprocessing_context option should be a valid "
                        "context object or a string specifying the start method, but got "
                        f"multiprocessing_context={context!r}")
    return context
