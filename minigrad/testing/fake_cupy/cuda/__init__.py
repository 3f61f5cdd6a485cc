"""cupy.cuda in the stand-in: one device (id 0), streams, events, the memory pool and the
runtime queries. The stand-in runs every operation when it is issued, so a stream
orders nothing and synchronising waits for nothing, but the objects, their pointers and
the "current stream" behave as CuPy's do, so code that hands streams on can be tested.
"""
from __future__ import annotations

import itertools
import time

from minigrad.testing.fake_cupy._memory import MemoryPool, PinnedMemoryPool
from minigrad.testing.fake_cupy.cuda import curand, runtime

__all__ = ["Device", "Event", "MemoryPool", "PinnedMemoryPool", "Stream", "curand",
           "get_current_stream", "get_device_id", "get_elapsed_time", "is_available",
           "runtime"]

_stream_pointers = itertools.count(0x7000)


def is_available() -> bool:
    return True


def get_device_id() -> int:
    return 0


class Device:
    """cupy.cuda.Device: only device 0 exists."""

    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)
        runtime.check_device(self.id)

    compute_capability = "0"

    def synchronize(self) -> None:
        runtime.deviceSynchronize()

    def use(self) -> None:
        pass

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc_info) -> None:
        pass

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id} (stand-in)>"


class Stream:
    """cupy.cuda.Stream: `with Stream(): ...` makes it current; `ptr` 0 is the null
    stream, as in CuPy."""

    null: Stream  # set below

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False,
                 priority=None):
        self.ptr = 0 if null else (runtime.streamPerThread if ptds else next(_stream_pointers))
        self.non_blocking = non_blocking
        self._previous: list = []

    def __enter__(self) -> Stream:
        self._previous.append(get_current_stream())
        _current[0] = self
        return self

    def __exit__(self, *exc_info) -> None:
        _current[0] = self._previous.pop()

    def use(self) -> Stream:
        _current[0] = self
        return self

    def synchronize(self) -> None:
        pass

    @property
    def done(self) -> bool:
        return True

    def record(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        pass

    def __repr__(self) -> str:
        return f"<Stream {self.ptr:#x} (stand-in)>"


Stream.null = Stream(null=True)
_current = [Stream.null]


def get_current_stream(device_id: int = -1) -> Stream:
    """The stream CuPy issues work on (the null stream unless a `with Stream()` is open)."""
    return _current[0]


class Event:
    """cupy.cuda.Event: a host timestamp taken when recorded."""

    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False):
        self.disable_timing = disable_timing
        self._time: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        pass

    @property
    def done(self) -> bool:
        return True


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    """Milliseconds between two recorded events."""
    if start_event._time is None or end_event._time is None:
        raise runtime.CUDARuntimeError("cudaErrorInvalidResourceHandle: event not recorded")
    return (end_event._time - start_event._time) * 1e3
