"""Where the stand-in's device work goes: the current stream, and the capture recording
the work issued to it (CUDA stream capture, cupy/cuda/stream.pyx and graph.pyx).

CuPy issues every kernel to the current stream. While that stream is capturing, CUDA
runs nothing: each kernel, with its arguments and the addresses it reads and writes, is
recorded into a graph, and `Graph.launch()` runs the recorded kernels in issue order. The
stand-in models that with one choke point, `device_operation`, which wraps each function,
method and operator of the stand-in that runs a kernel:

- outside a capture it calls the function, after one read of a global;
- while the current stream captures, the call becomes a launch of the capture. It runs
  once at capture, on the values the arrays it touches would hold had the graph been
  launched so far (a "shadow" of each, kept only while capturing), to learn the shapes
  and dtypes of its results and to raise CuPy's errors; every array it touches then gets
  its memory back, and each array it allocated (a "fresh" result) is filled with poison
  (NaN for floats, bytes of 0xA5 for integers, True for bools). So nothing the capture
  issues takes effect, as on a GPU, and a result read before a launch is recognisably
  wrong. A launch calls the function again on the same arrays and Python arguments,
  so its writes land in the captured arrays and its reads see their contents at launch;
  each fresh result of the launch is copied into the array captured in its place;
- random draws (`random_draw`) are baked: the generator advances once, at capture, and
  every launch writes the numbers drawn then, as a graph replays cuRAND's captured
  offsets.

Copies between host and device while the current stream captures raise CuPy's
RuntimeError (`refuse_transfer`), before anything is copied, as memory.pyx does.
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np

from minigrad.testing.fake_cupy import _memory
from minigrad.testing.fake_cupy._errors import CUDARuntimeError

H2D = "H2D transfers"
D2H = "D2H transfers"
INVALIDATED = ("cudaErrorStreamCaptureInvalidated: operation failed due to a previous "
               "error during capture")
POISON_BYTE = 0xA5  # every byte of an integer result before its graph is launched

_current_stream = None  # the stream CuPy issues work on (cupy.cuda.get_current_stream())
captures: dict = {}  # pointer of a capturing stream -> its Capture
_recording = None  # the Capture receiving device work now (None: run it)
_plain_depth = 0  # > 0 while a capture or a launch runs an operation's NumPy code


def device_operation(function):
    """`function` as a kernel of the stand-in: run now, or recorded while the current
    stream captures (module docstring)."""
    return _recorded(function, baked=False)


def random_draw(function):
    """`function` as a cuRAND draw: during a capture its numbers are drawn once and
    every launch writes those numbers (module docstring)."""
    return _recorded(function, baked=True)


def _recorded(function, baked: bool):
    @functools.wraps(function)
    def operation(*args, **kwargs):
        if _recording is None:
            return function(*args, **kwargs)
        return _recording.record(functools.partial(function, *args, **kwargs),
                                 (args, kwargs), baked=baked)

    return operation


def record_call(pointer: int, run, arrays: list) -> None:
    """Record `run()`, a kernel touching `arrays`, into the capture of stream `pointer`
    (the Numba CUDA simulator's launches, minigrad/testing/cuda_simulator.py)."""
    captures[pointer].record(run, arrays, baked=False)


def refuse_transfer(what: str, stream=None) -> None:
    """CuPy's RuntimeError for a host<->device copy on a capturing stream (the current
    one unless `stream` is given); nothing when it is not capturing."""
    if not captures:
        return
    capture = captures.get((_current_stream if stream is None else stream).ptr)
    if capture is None:
        return
    if capture.error is not None:
        raise RuntimeError("the stream was capturing, but an error has invalidated the "
                           "capture sequence")
    raise RuntimeError(f"the current stream is capturing, so {what} are disallowed")


def capturing() -> bool:
    """Whether the current stream is capturing."""
    return bool(captures) and _current_stream.ptr in captures


def current_stream():
    return _current_stream


def issue_to(stream) -> None:
    """Make `stream` the one device work goes to (cupy.cuda's current stream)."""
    global _current_stream
    _current_stream = stream
    _refresh()


def begin(pointer: int, mode: int) -> None:
    """cudaStreamBeginCapture on stream `pointer`."""
    if pointer in captures:
        raise CUDARuntimeError("cudaErrorIllegalState: the operation cannot be performed "
                               "in the present state")
    captures[pointer] = Capture(mode)
    _refresh()


def end(pointer: int) -> tuple:
    """cudaStreamEndCapture on stream `pointer`: the launches recorded, in issue order."""
    capture = captures.pop(pointer, None)
    _refresh()
    if capture is None:
        raise CUDARuntimeError("cudaErrorIllegalState: the operation cannot be performed "
                               "in the present state")
    if capture.error is not None:
        raise CUDARuntimeError(INVALIDATED)
    return tuple(capture.launches)


def invalidate(pointers, error: str) -> None:
    """An operation CUDA forbids during capture (a synchronisation): the captures of
    `pointers` are invalidated, and the operation fails with `error`."""
    hit = [captures[p] for p in pointers if p in captures]
    for capture in hit:
        capture.error = error
    if hit:
        raise CUDARuntimeError(error)


def launch(launches: tuple, stream, graph) -> None:
    """cudaGraphLaunch: run `launches` now, or record the graph as one launch of the
    capture when `stream` is capturing (a child graph)."""
    capture = captures.get(stream.ptr)
    if capture is not None:
        capture.check_valid()
        capture.launches.append(_GraphLaunch(graph, launches))
        return
    with _plain(), _memory.using_allocator(None):  # a launch allocates no memory
        for step in launches:
            step.run()


@contextlib.contextmanager
def _plain():
    """Run NumPy code of operations without recording what it calls."""
    global _plain_depth
    _plain_depth += 1
    _refresh()
    try:
        yield
    finally:
        _plain_depth -= 1
        _refresh()


def _refresh() -> None:
    global _recording
    stream = _current_stream
    _recording = None if _plain_depth or stream is None else captures.get(stream.ptr)


def poison(dtype: np.dtype):
    """What a fresh result holds until its graph is launched."""
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind == "b":
        return True
    return np.frombuffer(bytes([POISON_BYTE]) * dtype.itemsize, dtype)[0]


class Capture:
    """The work issued to one capturing stream, and the shadows of the arrays it
    touched (the values they would hold had the graph been launched so far)."""

    def __init__(self, mode: int):
        self.mode = mode
        self.launches: list = []
        self.error: str | None = None  # the CUDA error that invalidated the capture
        self._shadows: dict = {}  # id(owner memory) -> (owner memory, its shadow)

    def check_valid(self) -> None:
        if self.error is not None:
            raise CUDARuntimeError(INVALIDATED)

    def record(self, run, operands, baked: bool):
        """Run `run()` at capture on the shadows of the arrays in `operands`, give them
        their memory back, poison the fresh results, and append the launch."""
        self.check_valid()
        touched = {}
        for array in _arrays_in(operands):
            owner = _memory.memory_owner(array._host)
            if owner.flags.writeable:
                touched[id(owner)] = owner
        result = self._run_on_shadows(run, touched)
        if result is NotImplemented:  # an operator handing over to the other operand's
            return result
        fresh = [(position, array) for position, array in enumerate(_arrays_in(result))
                 if id(_memory.memory_owner(array._host)) not in touched]
        if baked:
            self.launches.append(_Baked([a for _, a in fresh],
                                        [a._host.copy() for _, a in fresh]))
        else:
            self.launches.append(_Kernel(run, fresh))
        owners = {id(o): o for o in (_memory.memory_owner(a._host) for _, a in fresh)}
        for key, owner in owners.items():
            self._shadows[key] = (owner, owner.copy())
            owner[...] = poison(owner.dtype)
        return result

    def _run_on_shadows(self, run, touched: dict):
        memory = {key: owner.copy() for key, owner in touched.items()}
        for key, owner in touched.items():
            shadow = self._shadows.get(key)
            if shadow is not None:
                owner[...] = shadow[1]
        try:
            with _plain(), np.errstate(all="ignore"):  # shadow values: no warnings twice
                result = run()
            for key, owner in touched.items():
                self._shadows[key] = (owner, owner.copy())
        finally:
            for key, owner in touched.items():
                owner[...] = memory[key]
        return result


class _Kernel:
    """A captured kernel: the function and arguments, and where each result goes."""

    def __init__(self, run, fresh: list):
        self.function = run  # holds the arguments, and so the arrays, alive
        self.fresh = fresh  # (position among the results, array captured there)

    def run(self) -> None:
        results = list(_arrays_in(self.function()))
        for position, target in self.fresh:
            value = results[position]._host
            if value.shape != target.shape or value.dtype != target.dtype:
                raise RuntimeError(f"a captured kernel gave a {value.dtype} result of "
                                   f"shape {value.shape} at launch, {target.dtype} "
                                   f"{target.shape} at capture")
            target._host[...] = value


class _Baked:
    """Random numbers drawn at capture, written into their arrays at every launch."""

    def __init__(self, targets: list, values: list):
        self.targets = targets
        self.values = values

    def run(self) -> None:
        for target, value in zip(self.targets, self.values):
            target._host[...] = value


class _GraphLaunch:
    """A graph launched on a capturing stream: a child graph of the new one."""

    def __init__(self, graph, launches: tuple):
        self.graph = graph
        self.launches = launches

    def run(self) -> None:
        for step in self.launches:
            step.run()


def _arrays_in(value):
    """The stand-in arrays in `value`, in order, looking inside lists, tuples, dicts."""
    if isinstance(getattr(value, "_host", None), np.ndarray):
        yield value
    elif type(value) in (list, tuple):
        for item in value:
            yield from _arrays_in(item)
    elif type(value) is dict:
        for item in value.values():
            yield from _arrays_in(item)
