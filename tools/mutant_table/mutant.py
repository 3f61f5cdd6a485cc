"""One planted bug: a single textual replacement in one file, and the tests that must
catch it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """`original` must occur exactly once in `path` (relative to the repository root); the
    mutant replaces it with `replacement`. `tests` are pytest node ids (or files), listed
    fastest-failing first."""

    name: str
    path: str
    original: str
    replacement: str
    tests: tuple[str, ...]
