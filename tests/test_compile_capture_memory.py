"""A capture holds no array of the step (minigrad/compile/slots.py, array_info.py): the
step's intermediate arrays are freed as eagerly, what is known by id forgets an object
when it dies, and fusion compiles its kernels on stand-ins of the recorded types."""
import gc
import tracemalloc

import numpy as np
import pytest

import minigrad as mg
from minigrad.compile.array_info import ArrayInfo
from minigrad.compile.slots import Slots
from minigrad.compile.traced_device import traced_view

MIB = 2**20


def _chain(x):
    """Eight elementwise results, each dead once the next is made: (x * 1.5 + 0.25) fused
    into one kernel, tanh between them."""
    for _ in range(4):
        x = (x * 1.5 + 0.25).tanh()
    return x.sum()


def _peak_mib(fn, *args) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        fn(*args)
        return (tracemalloc.get_traced_memory()[1] - start) / MIB
    finally:
        tracemalloc.stop()


def test_a_capture_frees_the_steps_intermediate_arrays_as_eager_does():
    mg.compile(_chain, fullgraph=True)(mg.ones(4, 8))  # Numba's imports, the fused kernel
    x = mg.tensor(np.random.default_rng(0).standard_normal((1024, 2048)).astype(np.float32))
    eager_peak = _peak_mib(_chain, x)
    compiled = mg.compile(_chain, fullgraph=True)
    # the eager run, recorded, a copy of x (the rollback), then the first replay; holding
    # the eight 8 MiB results of the step would add about 60 MiB
    capture_peak = _peak_mib(compiled, x)
    assert eager_peak < 40
    assert capture_peak < eager_peak + 12, (capture_peak, eager_peak)
    np.testing.assert_array_equal(compiled(x).numpy(), _chain(x).numpy())


def test_slots_forget_an_array_that_died_before_its_id_is_taken_again():
    slots = Slots()
    traced = traced_view(np.zeros(4, np.float32))
    key = id(traced)
    slot = slots._new_slot(traced)
    assert slots.slot_of[key] == slot
    del traced
    gc.collect()
    assert key not in slots.slot_of
    assert slots.recorded_arrays()[slot] == ArrayInfo((4,), np.dtype(np.float32), True, True, True,
                                                      np.ndarray, False)
    with pytest.raises(RuntimeError, match=f"slot {slot} was freed"):
        slots.keep_of(slot)


def test_memory_numbers_are_never_given_twice():
    """Two arrays made one after the other often share an id; their memory numbers differ,
    and views of one array share its number."""
    slots = Slots()
    numbers = set()
    for _ in range(20):
        array = np.zeros(16, np.float32)
        first = slots._new_slot(traced_view(array))
        view = slots._new_slot(traced_view(array[2:]))
        assert slots.slot_roots[first] == slots.slot_roots[view]
        numbers.add(slots.slot_roots[first])
        del array
        gc.collect()
    assert len(numbers) == 20


LAYOUTS = {
    "C": lambda a: a,
    "F": lambda a: np.asfortranarray(a),
    "transposed": lambda a: a.T,
    "strided": lambda a: a[:, ::2],
    "broadcast": lambda a: np.broadcast_to(a[:1], a.shape),
    "one element": lambda a: a[:1, :1],
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_stand_in_has_the_type_numba_compiles_for(layout):
    numba = pytest.importorskip("numba")
    array = LAYOUTS[layout](np.arange(24, dtype=np.float32).reshape(4, 6))
    stand_in = ArrayInfo.of(array, on_device=False).stand_in(np.empty)
    assert numba.typeof(stand_in) == numba.typeof(array)
    assert stand_in.size <= 8
