"""`mg.backends.cudnn`: PyTorch's cuDNN switches, readable and settable.

minigrad does not use cuDNN: its GPU convolutions are CuPy matrix products, so the
switches change nothing and is_available() is False. `benchmark` would pick algorithms by
timing them (minigrad has one per op); `deterministic` is already what minigrad does:
its GPU ops give the same bits on every run, except scatter into repeated positions,
which mg.use_deterministic_algorithms(True) refuses (see minigrad/determinism.py).
"""
from __future__ import annotations

import contextlib

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: minigrad does not use cuDNN."""
    return False


def version() -> None:
    """None, as PyTorch says without cuDNN."""
    return None


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False,
          deterministic: bool = False, allow_tf32: bool = True):
    """Set the four switches for the `with` block, and restore them after it."""
    settings = globals()
    saved = {name: settings[name] for name in ("enabled", "benchmark", "deterministic",
                                               "allow_tf32")}
    settings.update(enabled=enabled, benchmark=benchmark, deterministic=deterministic,
                    allow_tf32=allow_tf32)
    try:
        yield
    finally:
        settings.update(saved)
