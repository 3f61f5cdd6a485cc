"""mg.Size: the type of `tensor.shape` and `tensor.size()`, a tuple of ints (like
torch.Size), so it compares equal to plain tuples and unpacks like one."""
from __future__ import annotations

import math


class Size(tuple):
    """A tensor's shape: a tuple of ints with `numel()`. `size + tuple` gives a Size;
    a slice gives a plain tuple (unlike torch.Size: indexing stays tuple-fast)."""

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        return math.prod(self)

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __repr__(self) -> str:
        return f"minigrad.Size({list(self)})"
