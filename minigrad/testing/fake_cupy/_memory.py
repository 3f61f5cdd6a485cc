"""Device memory accounting behind `cupy.get_default_memory_pool()`.

CuPy's pool rounds every allocation up to 512 bytes and keeps freed blocks for reuse, so
the memory it holds (`total_bytes`) grows to the high-water mark of what is in use
(`used_bytes`) and shrinks only on `free_all_blocks()`. The stand-in counts the same way:
every array that owns memory holds an `_Allocation`, released when the array dies.
"""
from __future__ import annotations

_BLOCK = 512


class MemoryPool:
    """The device memory pool (`cupy.cuda.MemoryPool`): what is used and what is held."""

    def __init__(self):
        self._used = 0
        self._held = 0

    def used_bytes(self) -> int:
        """Bytes in blocks that live arrays use."""
        return self._used

    def total_bytes(self) -> int:
        """Bytes the pool holds: in use plus cached free blocks."""
        return self._held

    def free_bytes(self) -> int:
        """Bytes in cached free blocks."""
        return self._held - self._used

    def free_all_blocks(self, stream=None) -> None:
        """Give the cached free blocks back to the device."""
        self._held = self._used


class PinnedMemoryPool:
    """The pinned host memory pool; the stand-in never pins memory."""

    def free_all_blocks(self) -> None:
        pass

    def n_free_blocks(self) -> int:
        return 0


DEFAULT_POOL = MemoryPool()
DEFAULT_PINNED_POOL = PinnedMemoryPool()


class _Allocation:
    """One block of the pool, returned to it when the array owning it is collected."""

    __slots__ = ("size",)

    def __init__(self, size: int):
        self.size = size
        pool = DEFAULT_POOL
        pool._used += size
        if pool._used > pool._held:
            pool._held = pool._used

    def __del__(self):
        DEFAULT_POOL._used -= self.size


def allocate(nbytes: int) -> _Allocation | None:
    """Account for `nbytes` of new device memory (None for an empty array)."""
    if nbytes == 0:
        return None
    return _Allocation(-(-nbytes // _BLOCK) * _BLOCK)
