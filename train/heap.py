"""Keeping freed memory for the next step: what a training command asks of the C
allocator before it trains.

Each training step makes and frees the same arrays as the step before. glibc's malloc
(Linux) hands freed memory back to the operating system: a block larger than its mmap
threshold (128 KiB to begin with, adjusted upwards as such blocks are freed) is a mapping
of its own, unmapped when freed, and the top of the heap is trimmed whenever more than
the trim threshold lies free there. The next step's arrays are then new pages, and the
first write to each page faults: about 2.7 us per 4 KiB page on a 2-core virtual
machine, where an elementwise kernel computes the page's 1024 float32 numbers in a
fraction of that. toy_translate's training step faulted some 5,000 times.

`keep_freed_memory()` raises both thresholds (mallopt): blocks up to 32 MiB, glibc's
largest threshold on 64-bit, come from the heap, and up to 256 MiB may lie free at its
top, so a step's arrays reuse the pages of the step before. The resident set then stays
near the step's peak, which a training process reaches every step anyway. This is a
choice for a whole process, so the commands make it when run as programs (`python -m
train.toy_translate`), not the library, and not `main()` called from other code. Where
the C library has no such setting (macOS, Windows, musl) it does nothing.
"""
from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 2**20  # bytes: larger blocks stay mappings of their own
TRIM_THRESHOLD = 256 * 2**20  # bytes that may lie free at the top of the heap


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse (see the module docstring);
    whether it took both settings."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1)
