"""Op counts and time per op type, forward and backward.

    with mg.profiler.profile() as prof:
        loss = model(x).sum(); loss.backward()
    print(prof.table())

`MINIGRAD_DEBUG=1` profiles the whole process and prints the table at exit. Backward
time of an op is inclusive: it counts the tensor ops its backward rule runs, which are
not counted again as forward ops. Ops on the GPU are timed from and to a synchronised
device, so each is charged for its own kernels (which makes profiling slow them down).
"""
from __future__ import annotations

import atexit
import os
import time
from collections import defaultdict

from minigrad.autograd.function import INSTRUMENTS
from minigrad.backend import cuda


class Profile:
    def __init__(self):
        self.forward_calls: dict[str, int] = defaultdict(int)
        self.forward_seconds: dict[str, float] = defaultdict(float)
        self.backward_calls: dict[str, int] = defaultdict(int)
        self.backward_seconds: dict[str, float] = defaultdict(float)
        self._backward_depth = 0

    def timed_apply(self, function, inputs, params):
        on_gpu = _on_gpu(*inputs)
        INSTRUMENTS.profiler = None  # time the plain apply, without re-entering this method
        try:
            start = _now(on_gpu)
            out = function.apply(*inputs, **params)
            elapsed = _now(on_gpu) - start
        finally:
            INSTRUMENTS.profiler = self
        if self._backward_depth == 0:
            self.forward_calls[function.__name__] += 1
            self.forward_seconds[function.__name__] += elapsed
        return out

    def timed_backward(self, node, grad):
        self._backward_depth += 1
        on_gpu = _on_gpu(grad)
        start = _now(on_gpu)
        try:
            return node.backward(grad)
        finally:
            self._backward_depth -= 1
            name = type(node).__name__
            self.backward_calls[name] += 1
            self.backward_seconds[name] += _now(on_gpu) - start

    def table(self) -> str:
        """Ops sorted by total time: calls, forward ms, backward ms."""
        names = set(self.forward_calls) | set(self.backward_calls)
        rows = sorted(
            names, key=lambda n: -(self.forward_seconds[n] + self.backward_seconds[n])
        )
        lines = [f"{'op':<22}{'fwd calls':>10}{'fwd ms':>11}{'bwd calls':>10}{'bwd ms':>11}"]
        for name in rows:
            lines.append(
                f"{name:<22}{self.forward_calls[name]:>10}"
                f"{self.forward_seconds[name] * 1e3:>11.3f}{self.backward_calls[name]:>10}"
                f"{self.backward_seconds[name] * 1e3:>11.3f}"
            )
        total_forward = sum(self.forward_seconds.values()) * 1e3
        total_backward = sum(self.backward_seconds.values()) * 1e3
        lines.append(f"{'total':<22}{'':>10}{total_forward:>11.3f}{'':>10}{total_backward:>11.3f}")
        return "\n".join(lines)


def _on_gpu(*tensors) -> bool:
    return any(getattr(t, "device", None) == "gpu" for t in tensors)


def _now(synchronize: bool) -> float:
    """The clock, after the queued GPU work has finished when `synchronize` (GPU calls
    return before the work runs: without waiting, an op would be charged only for
    queueing its kernels and a later one for waiting on them)."""
    if synchronize:
        cuda.synchronize()
    return time.perf_counter()


class profile:  # noqa: N801  (torch.profiler.profile's spelling)
    """Context manager that records a Profile; `.table()` formats it."""

    def __enter__(self) -> Profile:
        self._previous = INSTRUMENTS.profiler
        self.result = Profile()
        INSTRUMENTS.profiler = self.result
        return self.result

    def __exit__(self, *exc_info):
        INSTRUMENTS.profiler = self._previous
        return False


def _profile_whole_process() -> None:
    recorder = Profile()
    INSTRUMENTS.profiler = recorder
    atexit.register(lambda: print("\n[minigrad profile]\n" + recorder.table()))


if os.environ.get("MINIGRAD_DEBUG", "") not in ("", "0"):
    _profile_whole_process()
