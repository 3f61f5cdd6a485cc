"""The kernel switch: which implementation the dispatchers may use.

- "auto" (default): the Numba kernel where benchmarks/bench_kernels.py measured it faster
  (per-kernel size thresholds), the reference twin elsewhere;
- "numpy": always the reference twin (the name of the CPU array library; on a CuPy array the
  twin runs on the GPU);
- "numba": the Numba kernel wherever one exists for the input's dtype.

The process starts in the mode named by the environment variable MINIGRAD_KERNELS.
"""

import contextlib
import os
from collections.abc import Iterator

MODES = ("auto", "numpy", "numba")


def _parse(value: str) -> str:
    mode = value.strip().lower()
    if mode not in MODES:
        raise ValueError(f"kernel mode must be one of {MODES}, got {value!r}")
    return mode


_current = _parse(os.environ.get("MINIGRAD_KERNELS") or "auto")


def get_mode() -> str:
    """The current kernel mode: "auto", "numpy" or "numba"."""
    return _current


def set_mode(new_mode: str) -> None:
    """Switch the kernel mode for the whole process."""
    global _current
    _current = _parse(new_mode)


@contextlib.contextmanager
def mode(new_mode: str) -> Iterator[None]:
    """Run a block in another kernel mode, restoring the previous one afterwards."""
    previous = get_mode()
    set_mode(new_mode)
    try:
        yield
    finally:
        set_mode(previous)
