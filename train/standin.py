"""TensorDataset and DataLoader with the names and signatures of PyTorch's
torch.utils.data, as far as train.digits uses them."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from minigrad.tensor import Tensor


class TensorDataset:
    """Sample i is the tuple of every tensor's row i."""

    def __init__(self, *tensors: Tensor) -> None:
        if len({len(t) for t in tensors}) != 1:
            raise ValueError("TensorDataset: tensors must have the same first dimension, "
                             f"got shapes {[tuple(t.shape) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return len(self.tensors[0])


class DataLoader:
    """Batches of a TensorDataset, shuffled each pass by `generator` (a numpy Generator
    or an int seed) when shuffle=True; the last batch may be shorter."""

    def __init__(self, dataset: TensorDataset, batch_size: int = 1, shuffle: bool = False,
                 generator: np.random.Generator | int | None = None) -> None:
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.generator = np.random.default_rng(generator)

    def __iter__(self) -> Iterator[tuple]:
        count = len(self.dataset)
        order = self.generator.permutation(count) if self.shuffle else np.arange(count)
        for start in range(0, count, self.batch_size):
            yield self.dataset[order[start:start + self.batch_size]]

    def __len__(self) -> int:
        return -(-len(self.dataset) // self.batch_size)
