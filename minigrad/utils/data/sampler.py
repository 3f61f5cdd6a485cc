"""Samplers: which indices of a dataset to load, in which order (torch.utils.data's)."""
from __future__ import annotations

import numbers
from collections.abc import Iterator, Sequence

from minigrad.utils.data.generator import Generator, as_numpy_generator, resolve

_DRAWS_PER_CHUNK = 32  # RandomSampler's draws with replacement, taken at a time


class Sampler:
    """Base class: subclasses define `__iter__` (indices) and usually `__len__`."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError(f"{type(self).__name__} defines no __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the dataset's indices: a permutation per pass (num_samples > n
    gives several permutations, the last one cut), or with `replacement=True`,
    `num_samples` independent uniform draws. Each pass draws anew from `generator` (see
    generator.py for what it may be).

    Indices are drawn as they are consumed (a permutation at a time, or draws with
    replacement 32 at a time, as PyTorch does), so memory does not grow with num_samples:
    `RandomSampler(data, replacement=True, num_samples=10**10)` is an endless loader's
    sampler. The chunks continue one NumPy stream: the indices are those of a single
    draw of num_samples."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator = None):
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got "
                            f"replacement={replacement!r}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = as_numpy_generator(generator, "RandomSampler")
        if not is_positive_int(self.num_samples):
            raise ValueError(f"RandomSampler: num_samples should be a positive integer value, "
                             f"but got num_samples={self.num_samples!r}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        size = len(self.data_source)
        rng = resolve(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // _DRAWS_PER_CHUNK):
                yield from rng.integers(0, size, _DRAWS_PER_CHUNK).tolist()
            yield from rng.integers(0, size, self.num_samples % _DRAWS_PER_CHUNK).tolist()
            return
        for _ in range(self.num_samples // size):
            yield from rng.permutation(size).tolist()
        yield from rng.permutation(size)[:self.num_samples % size].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, drawn anew each pass."""

    def __init__(self, indices: Sequence[int], generator: Generator = None):
        self.indices = indices
        self.generator = as_numpy_generator(generator, "SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        for position in resolve(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[position]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler`; the last one shorter unless
    `drop_last`."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        check_batching("BatchSampler", batch_size, drop_last)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)


def check_batching(owner: str, batch_size, drop_last) -> None:
    """PyTorch's ValueErrors for a batch size that is not a positive int (0, -1, 2.0 and
    True are refused) or a drop_last that is not a bool."""
    if not is_positive_int(batch_size):
        raise ValueError(f"{owner}: batch_size should be a positive integer value, but got "
                         f"batch_size={batch_size!r}")
    if not isinstance(drop_last, bool):
        raise ValueError(f"{owner}: drop_last should be a boolean value, but got "
                         f"drop_last={drop_last!r}")


def is_int(value) -> bool:
    """An int, NumPy's too, but not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_positive_int(value) -> bool:
    return is_int(value) and value > 0
