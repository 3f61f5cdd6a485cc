"""Op counts and time per op type, forward and backward.

    with mg.profiler.profile() as prof:
        loss = model(x).sum(); loss.backward()
    print(prof.table())

`MINIGRAD_DEBUG=1` profiles the whole process and prints the table at exit
(MINIGRAD_DEBUG=compile prints mg.compile's plans instead; "1,compile" does both). Backward
time of an op is inclusive: it counts the tensor ops its backward rule runs, which are
not counted again as forward ops. Ops on the GPU are timed from and to a synchronised
device, so each is charged for its own kernels (which makes profiling slow them down).
"""
from __future__ import annotations

import atexit
import os
import time
from collections import defaultdict

from minigrad.autograd import engine
from minigrad.autograd.function import Function
from minigrad.backend import cuda

# the engine's own entry points, which a profile wraps while it records (the core has no
# profiling code in it)
_plain_apply = Function.apply.__func__
_plain_call_backward = engine.call_backward


class Profile:
    def __init__(self):
        self.forward_calls: dict[str, int] = defaultdict(int)
        self.forward_seconds: dict[str, float] = defaultdict(float)
        self.backward_calls: dict[str, int] = defaultdict(int)
        self.backward_seconds: dict[str, float] = defaultdict(float)
        self._depth = 0  # > 0 inside a timed call: ops run there are that call's

    def timed_apply(self, function, inputs, params):
        if self._depth:
            return _plain_apply(function, *inputs, **params)
        on_gpu = _on_gpu(*inputs)
        self._depth += 1
        start = _now(on_gpu)
        try:
            return _plain_apply(function, *inputs, **params)
        finally:
            self._depth -= 1
            name = _op_name(function)
            self.forward_calls[name] += 1
            self.forward_seconds[name] += _now(on_gpu) - start

    def timed_call_backward(self, node, grad, given_away):
        on_gpu = _on_gpu(grad)
        self._depth += 1
        start = _now(on_gpu)
        try:
            return _plain_call_backward(node, grad, given_away)
        finally:
            self._depth -= 1
            name = _op_name(type(node))
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


def _op_name(function: type) -> str:
    """The op a Function computes ("TanhFunction" computes "Tanh")."""
    return function.__name__.removesuffix("Function")


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
        self._previous = _active
        self.result = Profile()
        _record_into(self.result)
        return self.result

    def __exit__(self, *exc_info):
        _record_into(self._previous)
        return False


_active: Profile | None = None


def _record_into(recorder: Profile | None) -> None:
    """Wrap Function.apply and the engine's call_backward so that they time every op into
    `recorder`; None puts the plain ones back."""
    global _active
    _active = recorder
    if recorder is None:
        Function.apply = classmethod(_plain_apply)
        engine.call_backward = _plain_call_backward
        return

    def timed_apply(cls, *inputs, **params):
        return recorder.timed_apply(cls, inputs, params)

    Function.apply = classmethod(timed_apply)
    engine.call_backward = recorder.timed_call_backward


def _profile_whole_process() -> None:
    recorder = Profile()
    _record_into(recorder)
    atexit.register(lambda: print("\n[minigrad profile]\n" + recorder.table()))


if set(os.environ.get("MINIGRAD_DEBUG", "").split(",")) - {"", "0", "compile"}:
    _profile_whole_process()
