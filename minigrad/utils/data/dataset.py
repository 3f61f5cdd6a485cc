"""Datasets: the map-style `Dataset` (indexable, sized) and `IterableDataset` (a stream),
`TensorDataset`, `Subset`, `ConcatDataset` and `random_split`, as in torch.utils.data."""
from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Iterator, Sequence

from minigrad.tensor import Tensor
from minigrad.utils.data.generator import Generator, as_numpy_generator, resolve


class Dataset:
    """A map-style dataset: subclasses define `__getitem__(index)` and `__len__()`.
    `a + b` concatenates two datasets."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} defines no __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define `__iter__()` (and may define
    `__len__`). A DataLoader batches it in the order it yields."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__} defines no __iter__")

    def __add__(self, other):
        raise TypeError("ConcatDataset does not take IterableDatasets; chain their "
                        "iterators instead")


class TensorDataset(Dataset):
    """Sample i is `(tensors[0][i], tensors[1][i], ...)`; every tensor has the same first
    dimension."""

    def __init__(self, *tensors: Tensor):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for position, tensor in enumerate(tensors):
            if not isinstance(tensor, Tensor) or tensor.ndim == 0:
                raise TypeError(f"TensorDataset: argument {position} must be a tensor with "
                                f"at least one dimension, got {_describe(tensor)}")
        sizes = [tensor.shape[0] for tensor in tensors]
        if len(set(sizes)) > 1:
            raise ValueError(f"TensorDataset: size mismatch between tensors: their first "
                             f"dimensions are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of several map-style datasets, one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise TypeError("ConcatDataset does not take IterableDatasets")
        self.cumulative_sizes = []
        total = 0
        for dataset in self.datasets:
            total += len(dataset)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int):
        if index < 0:
            if -index > len(self):
                raise IndexError(f"ConcatDataset: index {index} out of range for length "
                                 f"{len(self)}")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {index} out of range for length "
                             f"{len(self)}")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def random_split(dataset, lengths: Sequence, generator: Generator = None) -> list[Subset]:
    """Split `dataset` at random into non-overlapping Subsets of the given `lengths`:
    counts that sum to len(dataset), or fractions that sum to 1 (each gets
    floor(fraction * n) samples, and the remainder goes one by one to the first splits,
    as in PyTorch)."""
    size = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_of_fractions(lengths, size)
    if any(not isinstance(length, numbers.Integral) or length < 0 for length in lengths):
        raise ValueError(f"random_split: lengths must be non-negative ints or fractions that "
                         f"sum to 1, got {lengths}")
    if sum(lengths) != size:
        raise ValueError(f"random_split: the lengths {lengths} sum to {sum(lengths)}, but "
                         f"the dataset has {size} samples")
    rng = resolve(as_numpy_generator(generator, "random_split"))
    order = rng.permutation(size).tolist()
    splits, start = [], 0
    for length in lengths:
        splits.append(Subset(dataset, order[start:start + length]))
        start += length
    return splits


def _lengths_of_fractions(fractions: list, size: int) -> list[int]:
    for position, fraction in enumerate(fractions):
        if not 0 <= fraction <= 1:
            raise ValueError(f"random_split: fraction at index {position} is {fraction}, "
                             "not between 0 and 1")
    lengths = [math.floor(size * fraction) for fraction in fractions]
    for position in range(size - sum(lengths)):
        lengths[position % len(lengths)] += 1
    return lengths


def _describe(value) -> str:
    return "a 0-d tensor" if isinstance(value, Tensor) else type(value).__name__
