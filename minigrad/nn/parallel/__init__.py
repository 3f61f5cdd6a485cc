"""minigrad.nn.parallel: DistributedDataParallel (PyTorch's torch.nn.parallel name)."""
from minigrad.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
