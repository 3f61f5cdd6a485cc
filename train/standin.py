"""TensorDataset, DataLoader and CosineAnnealingLR with PyTorch's names and signatures, as
far as train.digits uses them (minigrad.utils.data and
minigrad.optim.lr_scheduler.CosineAnnealingLR have the full versions)."""
from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from minigrad.optim.lr_scheduler import LRScheduler
from minigrad.optim.optimizer import Optimizer
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


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]
