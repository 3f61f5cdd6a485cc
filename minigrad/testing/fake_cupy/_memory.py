"""Device memory accounting: the pools behind `cupy.get_default_memory_pool()` and
`cupy.cuda.MemoryPool`, and the allocator `cupy.cuda.using_allocator` switches.

CuPy's pool rounds every allocation up to 512 bytes and keeps freed blocks for reuse, so
the memory it holds (`total_bytes`) grows to the high-water mark of what is in use
(`used_bytes`) and shrinks only on `free_all_blocks()`. The stand-in counts the same way:
every array that owns memory holds what the current allocator returned for it (an
`_Allocation` of a pool by default), released when the array dies. Inside
`using_allocator(pool.malloc)` new arrays are counted in `pool` instead of the default
pool; `using_allocator(None)` is CuPy's raw allocator, which no pool counts.
"""
from __future__ import annotations

import contextlib

import numpy as np

_BLOCK = 512


class MemoryPool:
    """The device memory pool (`cupy.cuda.MemoryPool`): what is used and what is held."""

    def __init__(self, allocator=None):
        self._used = 0
        self._held = 0

    def malloc(self, size: int) -> _Allocation:
        """A block of at least `size` bytes from this pool (CuPy's MemoryPointer: in the
        stand-in only the accounting, the memory itself is the array's NumPy buffer)."""
        return _Allocation(self, -(-size // _BLOCK) * _BLOCK)

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
    """One block of a pool, returned to it when the array owning it is collected."""

    __slots__ = ("pool", "size")

    def __init__(self, pool: MemoryPool, size: int):
        self.pool = pool
        self.size = size
        pool._used += size
        if pool._used > pool._held:
            pool._held = pool._used

    @property
    def ptr(self) -> int:
        return 0  # the stand-in's memory lives in the array's NumPy buffer

    def __del__(self):
        self.pool._used -= self.size


class _RawMemory:
    """What CuPy's raw allocator (no pool) returns: memory that no pool counts."""

    __slots__ = ("size",)

    def __init__(self, size: int):
        self.size = size

    ptr = 0


def _malloc(size: int) -> _RawMemory:
    return _RawMemory(size)


_allocator = DEFAULT_POOL.malloc  # what allocate() calls (cupy.cuda.get_allocator())
_pool = DEFAULT_POOL  # the pool whose malloc _allocator is, if it is one


def allocate(nbytes: int):
    """Account for `nbytes` of new device memory with the current allocator (None for
    an empty array)."""
    if nbytes == 0:
        return None
    if _pool is not None:  # a pool's malloc, without the bound method call
        return _Allocation(_pool, -(-nbytes // _BLOCK) * _BLOCK)
    return _allocator(nbytes)


def get_allocator():
    """The allocator new arrays come from (cupy.cuda.get_allocator)."""
    return _allocator


@contextlib.contextmanager
def using_allocator(allocator=None):
    """cupy.cuda.using_allocator: arrays allocated inside come from `allocator` (a
    function of a size, such as `MemoryPool().malloc`; None: the raw allocator, no
    pool). CuPy's setting is per thread; the stand-in's, like its current stream, is
    one for the process."""
    global _allocator, _pool
    previous = _allocator, _pool
    _allocator = _malloc if allocator is None else allocator
    owner = getattr(_allocator, "__self__", None)
    _pool = owner if isinstance(owner, MemoryPool) and _allocator == owner.malloc else None
    try:
        yield
    finally:
        _allocator, _pool = previous


def memory_owner(host):
    """The NumPy array at the root of `host`'s chain of views: the memory it uses."""
    while isinstance(host.base, np.ndarray):
        host = host.base
    return host
