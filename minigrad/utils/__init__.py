"""minigrad.utils: data loading (`minigrad.utils.data`, PyTorch's torch.utils.data)."""
from minigrad.utils import data

__all__ = ["data"]
