"""New blocks of buffers (minigrad/compile/buffers.py) full of NaN: every byte 0xFF, a
NaN in float32 and float64. A replay that reads a result before writing it, or writes
over one still alive, then shows in the numbers compared with eager. Arrays of every size
get buffers meanwhile, so that small test programs take them too."""
from __future__ import annotations

import contextlib
from unittest import mock

from minigrad.compile import buffers


@contextlib.contextmanager
def poisoned_blocks():
    made = buffers.Block.__init__

    def poisoned(self, size):
        made(self, size)
        self.memory[...] = 0xFF

    with mock.patch.object(buffers.Block, "__init__", poisoned), \
            mock.patch.object(buffers, "MIN_BYTES", 0):
        yield
