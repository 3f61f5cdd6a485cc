"""Flatten and Unflatten: reshape modules for the step between conv layers and a linear
head (PyTorch's names and defaults)."""
from __future__ import annotations

import math

from minigrad.nn.modules.module import Module
from minigrad.tensor import Tensor


class Flatten(Module):
    """Merges dims start_dim..end_dim into one; the default keeps the batch dim:
    (N, C, H, W) -> (N, C * H * W)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim `dim` into `unflattened_size` (one entry may be -1)."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        dim = self.dim % input.ndim if input.ndim else 0
        size = input.shape[dim]
        known = math.prod(n for n in self.unflattened_size if n != -1)
        inferred = -1 in self.unflattened_size
        fits = (known != 0 and size % known == 0) if inferred else known == size
        if not fits:
            raise RuntimeError(f"Unflatten: cannot split dim {self.dim} of size {size} (input "
                               f"of shape {tuple(input.shape)}) into {self.unflattened_size}")
        return input.reshape(*input.shape[:dim], *self.unflattened_size,
                             *input.shape[dim + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
