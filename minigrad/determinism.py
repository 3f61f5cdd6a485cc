"""`mg.use_deterministic_algorithms`: PyTorch's switch for ops whose result may depend on
the order in which the GPU's threads finish.

minigrad's GPU sums into repeated indices (the gradients of embedding, x[idx], gather
and index_select, and scatter_add) are deterministic whatever the switch says (a sorted
segment sum: minigrad/kernels/segment_sum.py), so the same seed gives the same bits on
every run. With the switch on, an op that has no deterministic implementation raises
RuntimeError naming itself when it would run nondeterministically (or warns, with
`warn_only=True`), as PyTorch's ops do:

- `scatter` / `scatter_` of a tensor on the GPU whose index repeats a position: which
  of the values written there lands last is up to CUDA.

The switch holds for the whole process (as PyTorch's does), until changed again.
"""
from __future__ import annotations

import warnings

_mode = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """With `mode` True, ops without a deterministic implementation raise RuntimeError
    where their result could depend on the GPU's timing (with `warn_only` True they
    warn instead and run)."""
    for name, value in (("mode", mode), ("warn_only", warn_only)):
        if not isinstance(value, bool):
            raise TypeError(f"use_deterministic_algorithms: {name} must be a bool, got "
                            f"{type(value).__name__}")
    _mode["enabled"], _mode["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """True when `use_deterministic_algorithms(True)` is in force."""
    return _mode["enabled"]


def alert_not_deterministic(caller: str) -> None:
    """Raise RuntimeError (or warn, under warn_only) naming `caller` when the switch is on;
    called by an op just before it runs nondeterministically."""
    if not _mode["enabled"]:
        return
    message = (f"{caller} does not have a deterministic implementation, but "
               "mg.use_deterministic_algorithms(True) is set. Turn it off around this "
               "call, or pass warn_only=True to be warned instead")
    if _mode["warn_only"]:
        warnings.warn(message, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(message)
