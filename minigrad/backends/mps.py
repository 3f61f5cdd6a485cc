"""`mg.backends.mps`: Apple's Metal GPUs, which minigrad does not support (is_available()
and is_built() are False; scripts that check them fall back to "cuda" or "cpu")."""
from __future__ import annotations


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
