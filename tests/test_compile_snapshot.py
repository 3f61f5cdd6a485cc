"""What a capture keeps of the eager run to check the first replay against
(minigrad/compile/snapshot.py), and what that costs in memory: a snapshot compares as
np.array_equal(equal_nan=True) does, bit for bit otherwise, and holds no copy of a NumPy
array; the rollback copies each array the step changes once."""
import gc
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from training_steps import training_step

import minigrad as mg
from minigrad import nn, optim
from minigrad.compile.snapshot import Snapshot

DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.int32, np.int64, np.bool_]


@settings(max_examples=80, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_a_snapshot_matches_what_array_equal_with_equal_nan_matches(data, dtype):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=5))
    first = data.draw(hnp.arrays(dtype, shape))
    second = first.copy()
    if second.size and data.draw(st.booleans()):  # change one element's bits
        flat = second.reshape(-1)
        flat[data.draw(st.integers(0, flat.size - 1))] = data.draw(hnp.from_dtype(
            np.dtype(dtype)))
    want = np.array_equal(first, second, equal_nan=np.dtype(dtype).kind in "fc")
    assert Snapshot(first).matches(second) == want


def test_nan_payloads_and_the_sign_of_zero_are_not_differences():
    x = np.array([np.nan, 0.0, 1.0], np.float32)
    other_nan = np.array([0x7FC00001, 0x80000000, 0x3F800000], np.uint32).view(np.float32)
    assert Snapshot(x).matches(other_nan)
    assert not Snapshot(x).matches(np.array([np.nan, 0.0, np.nextafter(1, 2, dtype=np.float32)]))


def test_a_snapshot_differs_in_shape_or_dtype():
    x = np.zeros((2, 3), np.float32)
    assert not Snapshot(x).matches(x.reshape(3, 2))
    assert not Snapshot(x).matches(x.astype(np.float64))


def test_a_snapshot_does_not_follow_later_writes():
    x = np.arange(6.0)
    snapshot = Snapshot(x)
    x[2] = -1
    assert not snapshot.matches(x)


@pytest.mark.filterwarnings("error:mg.compile")
def test_a_capture_keeps_one_copy_of_each_array_the_step_changes():
    """A whole Adam step on a 1 MiB weight, captured after an eager step made Adam's
    state and a gradient: the capture keeps the rollback's copies of the weight and the
    two moments (3 MiB) and a step's temporaries, not of the gradient, which zero_grad
    drops unread; a copy of each array for the comparison, or of the old gradient,
    would take it past 6 MiB."""
    mg.manual_seed(0)
    model = nn.Linear(512, 512, bias=False)
    train = training_step(model, optim.Adam(model.parameters(), lr=1e-3))
    x, y = mg.randn(4, 512), mg.randn(4, 512)
    train(x, y)  # eagerly: Adam's moments and a gradient exist before the capture
    step = mg.compile(train, fullgraph=True)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        step(x, y)  # the capture
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert len(step.plans()) == 1
    assert peak < 6 * 2**20, f"{peak / 2**20:.1f} MiB"
