"""minigrad.utils.data: datasets, samplers and DataLoader with torch.utils.data's names.

    from minigrad.utils.data import DataLoader, TensorDataset, random_split
    train, val = random_split(TensorDataset(x, y), [0.9, 0.1], generator=0)
    for xb, yb in DataLoader(train, batch_size=32, shuffle=True, generator=0): ...

Wherever PyTorch takes a torch.Generator, these take a numpy.random.Generator or an int
seed (see generator.py).
"""
from minigrad.utils.data.collate import default_collate, default_convert
from minigrad.utils.data.dataloader import DataLoader
from minigrad.utils.data.dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from minigrad.utils.data.distributed import DistributedSampler
from minigrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
)
from minigrad.utils.data.worker import WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
