"""AdamW where PyTorch keeps it (torch.optim.adamw.AdamW): Adam with decoupled weight decay,
defined beside Adam in adam.py."""
from minigrad.optim.adam import AdamW

__all__ = ["AdamW"]
