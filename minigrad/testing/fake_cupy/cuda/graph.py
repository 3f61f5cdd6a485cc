"""cupy.cuda.graph in the stand-in: `Graph`, what `Stream.end_capture()` returns.

A graph is the work issued to a stream between `begin_capture()` and `end_capture()`,
which did not run then; `launch()` runs it in issue order on the arrays it was captured
with, with the Python scalars, shapes and random numbers of the capture
(minigrad/testing/fake_cupy/_capture.py has the model).

The stand-in's graph holds every array its launches touch, so their memory stays valid
however long the graph lives. A CUDA graph holds only addresses: on a GPU the caller must
keep that memory alive and unshared for the graph's life (typically by capturing into a
private memory pool, `cupy.cuda.using_allocator(pool.malloc)`, kept with the graph), or a
launch writes into memory another array was given since.
"""
from __future__ import annotations

from minigrad.testing.fake_cupy import _capture


class Graph:
    """cupy.cuda.Graph: made by stream capture only (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("currently this class cannot be initiated by the user "
                                  "and must be created via stream capture")

    @classmethod
    def _from_capture(cls, launches: tuple) -> Graph:
        graph = object.__new__(cls)
        graph._launches = launches
        return graph

    def launch(self, stream=None) -> None:
        """Run the captured work on `stream` (the current stream when None); on a
        capturing stream, record it into that capture instead."""
        _capture.launch(self._launches, _stream(stream), self)

    def upload(self, stream=None) -> None:
        """Make the graph ready to launch on `stream`: nothing to do in the stand-in."""
        _stream(stream)

    def __repr__(self) -> str:
        return f"<cupy.cuda.Graph of {len(self._launches)} launches (stand-in)>"


def _stream(stream):
    if stream is None:
        return _capture.current_stream()
    if not hasattr(stream, "ptr"):
        raise TypeError(f"stream must be a cupy.cuda.Stream, got {type(stream)}")
    return stream
