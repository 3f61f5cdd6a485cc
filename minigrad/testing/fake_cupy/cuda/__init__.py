"""cupy.cuda in the stand-in: one device (id 0), streams, events, the memory pools and
allocators, the runtime queries, and stream capture into CUDA graphs. The stand-in runs
every operation when it is issued, so a stream orders nothing and synchronising waits
for nothing, but the objects, their pointers and the "current stream" behave as CuPy's
do, so code that hands streams on can be tested. A capturing stream does not run the
work issued to it: it records it into a `Graph` (graph.py, ../_capture.py).
"""
from __future__ import annotations

import itertools
import time

from minigrad.testing.fake_cupy import _capture
from minigrad.testing.fake_cupy._memory import (
    MemoryPool,
    PinnedMemoryPool,
    get_allocator,
    using_allocator,
)
from minigrad.testing.fake_cupy.cuda import curand, graph, runtime
from minigrad.testing.fake_cupy.cuda.graph import Graph

__all__ = ["Device", "Event", "Graph", "MemoryPool", "PinnedMemoryPool", "Stream", "curand",
           "get_allocator", "get_current_stream", "get_device_id", "get_elapsed_time",
           "graph", "is_available", "runtime", "using_allocator"]

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
    stream, as in CuPy. Streams with one pointer (those made with ptds=True) are one
    CUDA stream: they capture together."""

    null: Stream  # set below

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False,
                 priority=None):
        self.ptr = 0 if null else (runtime.streamPerThread if ptds else next(_stream_pointers))
        self.non_blocking = non_blocking
        self._previous: list = []

    def __enter__(self) -> Stream:
        self._previous.append(get_current_stream())
        _capture.issue_to(self)
        return self

    def __exit__(self, *exc_info) -> None:
        _capture.issue_to(self._previous.pop())

    def use(self) -> Stream:
        _capture.issue_to(self)
        return self

    def synchronize(self) -> None:
        """Nothing to wait for; CUDA forbids it on a capturing stream (the capture is
        invalidated and it raises)."""
        _capture.invalidate([self.ptr], runtime._CAPTURE_UNSUPPORTED)

    @property
    def done(self) -> bool:
        _capture.invalidate([self.ptr], runtime._CAPTURE_UNSUPPORTED)  # cudaStreamQuery
        return True

    def begin_capture(self, mode=None) -> None:
        """Start capturing: the work issued to this stream is recorded, not run, until
        `end_capture()` returns it as a Graph. `mode`: a runtime.streamCaptureMode*
        (default Relaxed, CuPy's); the stand-in keeps it but models no difference."""
        if self.ptr == 0 or self.ptr == 1:
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if mode is None:
            mode = runtime.streamCaptureModeRelaxed
        if mode not in (runtime.streamCaptureModeGlobal, runtime.streamCaptureModeThreadLocal,
                        runtime.streamCaptureModeRelaxed):
            raise runtime.CUDARuntimeError("cudaErrorInvalidValue: invalid argument")
        _capture.begin(self.ptr, mode)

    def end_capture(self) -> Graph:
        """Stop capturing; the Graph of the work issued since `begin_capture()`."""
        return Graph._from_capture(_capture.end(self.ptr))

    def is_capturing(self) -> bool:
        return runtime.streamIsCapturing(self.ptr)

    def record(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        pass

    def __repr__(self) -> str:
        return f"<Stream {self.ptr:#x} (stand-in)>"


Stream.null = Stream(null=True)
_capture.issue_to(Stream.null)


def get_current_stream(device_id: int = -1) -> Stream:
    """The stream CuPy issues work on (the null stream unless a `with Stream()` is open)."""
    return _capture.current_stream()


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
