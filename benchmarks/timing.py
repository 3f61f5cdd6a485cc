"""Shared timing helpers for the benchmark scripts: interleaved medians."""
from __future__ import annotations

import statistics
import time


def median_times(functions: dict, repeats: int = 200, inner: int = 1, warmup: int = 20) -> dict:
    """Median seconds per call of each function, measured in interleaved rounds so that
    noise from other processes hits every contender alike."""
    for fn in functions.values():
        for _ in range(warmup):
            fn()
    samples: dict = {name: [] for name in functions}
    for _ in range(repeats):
        for name, fn in functions.items():
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            samples[name].append((time.perf_counter() - start) / inner)
    return {name: statistics.median(values) for name, values in samples.items()}


def print_table(headers: list, rows: list) -> None:
    """A GitHub-markdown table (its header alone when there are no rows)."""
    widths = [max([len(str(h)), *(len(str(r[i])) for r in rows)])
              for i, h in enumerate(headers)]
    line = "| " + " | ".join(str(h).ljust(w) for h, w in zip(headers, widths)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths)) + " |")
