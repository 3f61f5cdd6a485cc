"""DistributedSampler: each rank's own shard of each epoch (torch.utils.data's)."""
from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from minigrad import distributed
from minigrad.utils.data.sampler import Sampler, is_int, is_positive_int


class DistributedSampler(Sampler):
    """The indices of rank `rank` of `num_replicas` (default: the process group's): every
    num_replicas-th index of the epoch's order, starting at `rank`.

    The order is a permutation seeded by `seed + epoch` when `shuffle` (so every rank
    computes the same one: use the same seed everywhere, and call `set_epoch(epoch)`
    before each epoch, or every epoch repeats the first one's order), else 0..n-1. Each
    rank gets ceil(n / num_replicas) indices: the order is padded by repeating its start
    so that it divides evenly, or, with `drop_last`, cut to floor(n / num_replicas) per
    rank.
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        if num_replicas is None:
            num_replicas = distributed.get_world_size()
        if rank is None:
            rank = distributed.get_rank()
        if not is_positive_int(num_replicas):
            raise ValueError(f"DistributedSampler: num_replicas should be a positive integer "
                             f"value, but got num_replicas={num_replicas!r}")
        if not is_int(rank) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: invalid rank {rank}, rank should be in the "
                             f"interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas, self.rank = num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0
        size = len(dataset)
        if drop_last and size % num_replicas:
            self.num_samples = math.ceil((size - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(size / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        size = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(size).tolist()
        else:
            order = list(range(size))
        if self.drop_last:
            order = order[:self.total_size]
        elif order:
            # pad by repeating the order from its start, as often as needed
            padding = self.total_size - len(order)
            order += (order * math.ceil(padding / len(order)))[:padding]
        return iter(order[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use the order of `epoch` from now on (when shuffle)."""
        self.epoch = epoch
