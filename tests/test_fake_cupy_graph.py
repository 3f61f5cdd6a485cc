"""CUDA graphs in the CuPy stand-in (minigrad/testing/fake_cupy/_capture.py, cuda/graph.py):
work issued to a capturing stream is recorded, not run (its results hold poison, arrays
from before keep their values); each launch runs it in issue order on the captured
arrays, reading them at launch, with the capture's random numbers; host transfers and
synchronisation raise as in CuPy and CUDA; `using_allocator` counts arrays in its pool.
These run on every machine: the stand-in needs no GPU."""
from __future__ import annotations

import contextlib
import gc
import operator
import os
import re
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minigrad.testing import fake_cupy as cp

CUDARuntimeError = cp.cuda.runtime.CUDARuntimeError
ROOT = Path(__file__).resolve().parents[1]
GRAPH_SETTINGS = settings(max_examples=15, deadline=None)


@pytest.fixture
def stream():
    """A stream to capture on; a test failing part way leaves no capture behind."""
    stream = cp.cuda.Stream(non_blocking=True)
    yield stream
    with contextlib.suppress(Exception):
        stream.end_capture()
    cp.cuda.Stream.null.use()


def captured(stream, work, *operands):
    """(graph, what work(*operands) returned), issued to `stream` while it captures."""
    with stream:
        stream.begin_capture()
        result = work(*operands)
        graph = stream.end_capture()
    return graph, result


def _assert_same(got, expected) -> None:
    """Equal values, dtype and shape (a NaN matches only a NaN)."""
    got = got.get()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def _matrices(shape=None):
    """Two float32 matrices, (n, m) and (m, n) (n, m drawn unless `shape` is given)."""
    values = st.floats(-3, 3, width=32)
    shapes = st.tuples(st.integers(1, 4), st.integers(2, 5)) if shape is None else st.just(shape)
    return shapes.flatmap(lambda shape: st.tuples(
        hnp.arrays(np.float32, shape, elements=values),
        hnp.arrays(np.float32, shape[::-1], elements=values)))


MIX = cp.ElementwiseKernel("float32 a, float32 b", "float32 c", "c = a * b - (a > b ? a : b);",
                           "mix")
INCREMENT = cp.ElementwiseKernel("float32 a", "float32 b", "b = a + 1.0f;", "increment")


def _chain(a, b):
    """Ufuncs, operators, in-place updates, setitem, reductions, matmul and a kernel,
    on a transposed operand among others."""
    c = cp.exp(-a * a) + b.T
    c += 0.5
    c[0] = c[-1] * 2
    c[:, ::2] -= cp.tanh(c[:, ::2])
    d = c @ b
    e = np.maximum(d, 0.25)
    total = e.sum(axis=0) / e.shape[0]
    mixed = MIX(c, b.T.copy())
    index = cp.argmax(d, axis=1).astype(cp.int32)
    masked = cp.where(d > 0, d, cp.full(d.shape, -1.0, dtype=cp.float32))
    return c, d, e, total, mixed, index, masked, a[0] * 0 + cp.arange(a.shape[1])


# ----------------------------------------------------------------------------- launching


@GRAPH_SETTINGS
@given(first=_matrices(), second=st.data())
def test_a_captured_chain_launches_to_the_eager_results(first, second):
    stream = cp.cuda.Stream(non_blocking=True)
    a, b = cp.asarray(first[0]), cp.asarray(first[1])
    graph, results = captured(stream, lambda: _chain(a, b))
    for result in results:  # nothing ran yet
        if result.dtype.kind == "f":
            assert np.isnan(result.get()).all()
        else:
            assert (result.get().view(np.uint8) == 0xA5).all()
    graph.launch()
    for got, expected in zip(results, _chain(cp.asarray(first[0]), cp.asarray(first[1]))):
        _assert_same(got, expected.get())
    # new inputs written into the captured arrays: the next launch reads them
    new_a, new_b = second.draw(_matrices(first[0].shape))
    a[...], b[...] = cp.asarray(new_a), cp.asarray(new_b)
    graph.launch()
    for got, expected in zip(results, _chain(cp.asarray(new_a), cp.asarray(new_b))):
        _assert_same(got, expected.get())


def test_results_hold_poison_and_inputs_keep_their_values_until_a_launch(stream):
    x = cp.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    graph, (floats, ints, flags, view) = captured(stream, lambda: (
        x * 0.5, x + 1, x > 100, operator.iadd(x, 10)[1:]))
    # read on the null stream, which is not capturing: what a GPU would hold now
    assert np.isnan(floats.get()).all()
    assert (ints.get().view(np.uint8) == 0xA5).all()
    assert flags.get().all()
    np.testing.assert_array_equal(x.get(), np.arange(6).reshape(2, 3))
    graph.launch()
    np.testing.assert_array_equal(floats.get(), np.arange(6).reshape(2, 3) * 0.5)
    np.testing.assert_array_equal(ints.get(), np.arange(6).reshape(2, 3) + 1)
    assert not flags.get().any()
    # x += 10 ran after the three results were computed from x, in issue order
    np.testing.assert_array_equal(x.get(), np.arange(6).reshape(2, 3) + 10)
    assert view.base is x and view.get().tolist() == [[13, 14, 15]]


@GRAPH_SETTINGS
@given(values=hnp.arrays(np.float32, 5, elements=st.floats(-8, 8, width=32)),
       scale=st.floats(-4, 4, width=32))
def test_an_input_updated_in_place_between_launches_changes_the_output(values, scale):
    stream = cp.cuda.Stream(non_blocking=True)
    x = cp.zeros(5, dtype=cp.float32)
    graph, y = captured(stream, lambda: x * scale + 1)
    x[...] = cp.asarray(values)
    graph.launch()
    np.testing.assert_array_equal(y.get(), values * np.float32(scale) + 1)
    x += 2
    graph.launch()
    np.testing.assert_array_equal(y.get(), (values + 2) * np.float32(scale) + 1)


POSITIONS = cp.asarray([0, 3, 0, 4])  # made before any capture: a copy from the host
IN_PLACE = {
    "iadd": lambda x, at: operator.iadd(x, 1.0),
    "imul_strided_view": lambda x, at: operator.imul(x[::2], 3.0),
    "ufunc_out": lambda x, at: cp.subtract(x, 2.0, out=x),
    "numpy_ufunc_out": lambda x, at: np.add(x, x, out=x),
    "setitem": lambda x, at: x.__setitem__(slice(1, None), x[:-1] + 1),
    "scatter_add": lambda x, at: cp.add.at(x, at, x[1:] * 0 + 2),
    "kernel_output": lambda x, at: INCREMENT(x, x),
    "sort": lambda x, at: x.sort(),
}


@pytest.mark.parametrize("update", IN_PLACE.values(), ids=IN_PLACE.keys())
@GRAPH_SETTINGS
@given(values=hnp.arrays(np.float32, 5, elements=st.integers(-20, 20).map(float)),
       launches=st.integers(1, 3))
def test_an_in_place_update_applies_once_per_launch(update, values, launches):
    expected = cp.asarray(values)
    for _ in range(launches):
        update(expected, POSITIONS)
    stream = cp.cuda.Stream(non_blocking=True)
    x = cp.asarray(values)
    graph, _ = captured(stream, lambda: update(x, POSITIONS))
    np.testing.assert_array_equal(x.get(), values)  # not at capture
    for _ in range(launches):
        graph.launch()
    np.testing.assert_array_equal(x.get(), expected.get())


def test_random_draws_are_the_captures_at_every_launch(stream):
    def draw(state, generator, buffer):
        return (state.standard_normal(4, dtype=np.float32), state.uniform(-1, 1, (3,)),
                state.randint(0, 100, (5,)), generator.random(4, out=buffer))

    eager = [r.get() for r in draw(cp.random.RandomState(5), cp.random.default_rng(3),
                                   cp.zeros(4))]
    state, generator, buffer = cp.random.RandomState(5), cp.random.default_rng(3), cp.zeros(4)
    after = cp.random.RandomState(5)
    draw(after, cp.random.default_rng(3), cp.zeros(4))
    graph, results = captured(stream, lambda: draw(state, generator, buffer))
    assert np.isnan(results[0].get()).all() and (buffer.get() == 0).all()
    for _ in range(3):
        buffer.fill(-1.0)
        graph.launch()
        for got, expected in zip(results, eager):
            _assert_same(got, expected)
    # the generator advanced once, at capture
    _assert_same(state.normal(size=2), after.normal(size=2).get())


def test_a_captured_shuffle_applies_the_captured_permutation_at_each_launch(stream):
    values = np.arange(6.0) * 10
    permutation = cp.random.RandomState(9).permutation(6).get()
    a = cp.asarray(values)
    graph, _ = captured(stream, lambda: cp.random.RandomState(9).shuffle(a))
    np.testing.assert_array_equal(a.get(), values)
    graph.launch()
    graph.launch()
    np.testing.assert_array_equal(a.get(), values[permutation][permutation])


# ----------------------------------------------------------------------------- refusals

D2H, H2D = "D2H transfers", "H2D transfers"
TRANSFERS = {
    "get": (lambda x: x.get(), D2H),
    "asnumpy": (lambda x: cp.asnumpy(x), D2H),
    "item": (lambda x: x[0, 0].item(), D2H),
    "bool": (lambda x: bool(x[0, 0]), D2H),
    "float": (lambda x: float(x[0, 0]), D2H),
    "int": (lambda x: int(x[0, 0]), D2H),
    "tolist": (lambda x: x.tolist(), D2H),
    "repr": (repr, D2H),
    "str": (str, D2H),
    "format": (lambda x: f"{x[0, 0]:.2f}", D2H),
    "assert_allclose": (lambda x: cp.testing.assert_allclose(x, x), D2H),
    "mask_index": (lambda x: x[x > 2], D2H),
    "nonzero": (lambda x: cp.nonzero(x), D2H),
    "nonzero_method": (lambda x: x.nonzero(), D2H),
    "unique": (lambda x: cp.unique(x), D2H),
    "asarray_host": (lambda x: cp.asarray(np.ones(3)), H2D),
    "array_python_scalar": (lambda x: cp.array(2.0), H2D),
    "asarray_list": (lambda x: cp.asarray([1.0, 2.0]), H2D),
    "set": (lambda x: x.set(np.ones((2, 3))), H2D),
    "host_index": (lambda x: x[[0, 1]], H2D),
    "take_host_indices": (lambda x: x.take([0, 1]), H2D),
    "scalar_scatter": (lambda x: x.__setitem__(x[0].astype(cp.int64), 1.0), H2D),
}


@pytest.mark.parametrize("call, what", TRANSFERS.values(), ids=TRANSFERS.keys())
def test_host_transfers_raise_cupys_error_during_capture_and_work_after(stream, call, what):
    x = cp.asarray(np.arange(6.0).reshape(2, 3))

    def work():
        message = f"the current stream is capturing, so {what} are disallowed"
        with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
            call(x)
        return x + 1  # the capture goes on

    graph, y = captured(stream, work)
    graph.launch()
    np.testing.assert_array_equal(y.get(), np.arange(6.0).reshape(2, 3) + 1)
    call(x)


def test_a_function_giving_a_host_value_in_the_stand_in_cannot_be_captured(stream):
    """cupy.allclose gives a 0-d array in CuPy, a host bool in the stand-in: a capture
    could not update it at launch, so the stand-in says so instead of baking it."""
    x = cp.ones(3)
    with stream:
        stream.begin_capture()
        with pytest.raises(NotImplementedError, match="a capture cannot record it"):
            cp.allclose(x, x)
        stream.end_capture()
    assert cp.allclose(x, x) is True


SYNCHRONIZATIONS = {
    "stream": lambda stream: stream.synchronize(),
    "current_stream": lambda stream: cp.cuda.get_current_stream().synchronize(),
    "stream_query": lambda stream: stream.done,
    "device": lambda stream: cp.cuda.Device().synchronize(),
    "runtime": lambda stream: cp.cuda.runtime.deviceSynchronize(),
}


@pytest.mark.parametrize("synchronize", SYNCHRONIZATIONS.values(), ids=SYNCHRONIZATIONS.keys())
def test_synchronizing_a_capture_raises_and_invalidates_it(stream, synchronize):
    with stream:
        stream.begin_capture()
        with pytest.raises(CUDARuntimeError, match="^cudaErrorStreamCaptureUnsupported"):
            synchronize(stream)
        with pytest.raises(RuntimeError, match="an error has invalidated the capture"):
            stream.is_capturing()
        with pytest.raises(CUDARuntimeError, match="^cudaErrorStreamCaptureInvalidated"):
            cp.ones(2) * 2
        with pytest.raises(CUDARuntimeError, match="^cudaErrorStreamCaptureInvalidated"):
            stream.end_capture()
        assert not stream.is_capturing()
        synchronize(stream)  # allowed again
        assert (cp.ones(2) * 2).tolist() == [2.0, 2.0]


def test_capture_on_the_legacy_stream_is_refused():
    for legacy in (cp.cuda.Stream.null, cp.cuda.Stream(null=True)):
        with pytest.raises(RuntimeError,
                           match=r"^cannot capture on the default \(legacy\) stream$"):
            legacy.begin_capture()
        assert not legacy.is_capturing()
        assert not cp.cuda.runtime.streamIsCapturing(legacy.ptr)


def test_beginning_twice_or_ending_without_beginning_is_an_illegal_state(stream):
    illegal = "^cudaErrorIllegalState: the operation cannot be performed in the present state$"
    with pytest.raises(CUDARuntimeError, match=illegal):
        stream.end_capture()
    stream.begin_capture()
    with pytest.raises(CUDARuntimeError, match=illegal):
        stream.begin_capture()
    assert stream.is_capturing() and cp.cuda.runtime.streamIsCapturing(stream.ptr)
    assert isinstance(stream.end_capture(), cp.cuda.Graph)
    with pytest.raises(CUDARuntimeError, match="^cudaErrorInvalidValue"):
        stream.begin_capture(mode=7)
    # two Stream objects of the per-thread default stream are one CUDA stream
    per_thread, twin = cp.cuda.Stream(ptds=True), cp.cuda.Stream(ptds=True)
    per_thread.begin_capture(mode=cp.cuda.runtime.streamCaptureModeGlobal)
    assert twin.is_capturing()
    with pytest.raises(CUDARuntimeError, match=illegal):
        twin.begin_capture()
    twin.end_capture()
    assert not per_thread.is_capturing()


# ----------------------------------------------------------------------------- the graph


def test_the_graph_is_cupys_and_keeps_its_arrays_alive(stream):
    with pytest.raises(NotImplementedError, match="must be created via stream capture"):
        cp.cuda.Graph()
    assert cp.cuda.graph.Graph is cp.cuda.Graph
    x = cp.arange(3.0)
    graph, y = captured(stream, lambda a: a * 2, x)
    x_alive, y_alive = weakref.ref(x), weakref.ref(y)
    del x
    gc.collect()
    assert x_alive() is not None  # a GPU would need the caller to keep it
    graph.upload()
    graph.launch(stream=cp.cuda.Stream())
    assert y.tolist() == [0.0, 2.0, 4.0]
    del graph, y
    gc.collect()
    assert x_alive() is None and y_alive() is None


def test_a_graph_launched_into_a_capture_runs_when_the_new_graph_does(stream):
    x = cp.zeros(2)
    inner, _ = captured(cp.cuda.Stream(), lambda: operator.iadd(x, 1.0))
    outer, y = captured(stream, lambda: (inner.launch(), x * 10)[1])
    assert x.tolist() == [0.0, 0.0]
    outer.launch()
    outer.launch()
    assert x.tolist() == [2.0, 2.0] and y.tolist() == [20.0, 20.0]


def test_work_on_a_stream_that_is_not_capturing_runs_at_once(stream):
    x = cp.ones(3)
    other = cp.cuda.Stream()

    def work():
        with other:  # relaxed mode: other streams work and copy as usual
            x[...] += 1
            assert x.tolist() == [2.0, 2.0, 2.0] and not other.is_capturing()
            other.synchronize()
        assert x.get(stream=other).tolist() == [2.0, 2.0, 2.0]
        return x * 3

    graph, y = captured(stream, work)
    graph.launch()
    graph.launch()
    assert x.tolist() == [2.0, 2.0, 2.0] and y.tolist() == [6.0, 6.0, 6.0]
    with other:
        assert (x + 1).tolist() == [3.0, 3.0, 3.0]
        assert not cp.cuda.runtime.streamIsCapturing(other.ptr)


# ----------------------------------------------------------------------------- memory


def test_using_allocator_counts_arrays_in_its_pool_and_launches_allocate_nothing(stream):
    gc.collect()
    gc.disable()  # no other array may be collected while the pools are being watched
    try:
        default = cp.get_default_memory_pool()
        used = default.used_bytes()
        pool = cp.cuda.MemoryPool()
        with cp.cuda.using_allocator(pool.malloc):
            x = cp.zeros(1000, dtype=np.float32)  # 4000 bytes, rounded up to 4096
            graph, y = captured(stream, lambda a: a[:500] + 1, x)  # 2000 bytes -> 2048
            with cp.cuda.using_allocator(None):
                raw = cp.zeros(1000)  # CuPy's raw allocator: no pool counts it
        assert pool.used_bytes() == 4096 + 2048 and default.used_bytes() == used
        graph.launch()
        assert pool.total_bytes() == 4096 + 2048 and default.used_bytes() == used
        in_default = cp.zeros(1000, dtype=np.float32)
        assert default.used_bytes() == used + 4096 and pool.used_bytes() == 4096 + 2048
        del x, y, graph, raw, in_default
        assert pool.used_bytes() == 0 and pool.total_bytes() == 4096 + 2048
        pool.free_all_blocks()
        assert pool.total_bytes() == 0 and default.used_bytes() == used
    finally:
        gc.enable()


# ----------------------------------------------------------------------------- Numba


def test_a_numba_simulator_kernel_is_recorded_into_the_capture():
    code = textwrap.dedent("""
        import numpy as np
        from numba import cuda
        import minigrad as mg
        from minigrad.kernels.cuda.launch import launch
        from minigrad.testing import fake_cupy as cp
        mg.ones(1, device="gpu")  # the first use installs the simulator's pieces

        @cuda.jit
        def double_into(x, out):
            i = cuda.grid(1)
            if i < x.size:
                out[i] = 2 * x[i]

        x = cp.arange(4, dtype=np.float32)
        out = cp.zeros(4, dtype=np.float32)
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            launch(double_into, 1, 4, x, out)
            x += 1
            graph = stream.end_capture()
        print(out.tolist(), x.tolist())
        graph.launch()
        graph.launch()
        print(out.tolist(), x.tolist())
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MINIGRAD_FAKE_GPU": "1",
           "NUMBA_ENABLE_CUDASIM": "1"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[0.0, 0.0, 0.0, 0.0] [0.0, 1.0, 2.0, 3.0]",
                                          "[2.0, 4.0, 6.0, 8.0] [2.0, 3.0, 4.0, 5.0]"]
