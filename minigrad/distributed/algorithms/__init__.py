"""minigrad.distributed.algorithms: Join, for training with uneven inputs (PyTorch's
torch.distributed.algorithms names)."""
from minigrad.distributed.algorithms.join import Join, Joinable, JoinHook

__all__ = ["Join", "JoinHook", "Joinable"]
