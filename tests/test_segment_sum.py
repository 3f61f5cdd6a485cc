"""Sums into repeated indices (minigrad/kernels/segment_sum.py) against their twin,
NumPy's add.at, on the CPU and on the GPU path (the CuPy stand-in where there is no GPU):
every kind of index, the pairwise order of the GPU's tree, infinities kept in their rows,
float16 summed in float32; and the switch mg.use_deterministic_algorithms."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.kernels.segment_sum import index_add, segment_sum

# the fixture switching the stand-in on holds for every example alike
SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _on(module, array):
    return array if module is np else module.asarray(array)


def _host(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else array.get()


def _twin(shape, index, values) -> np.ndarray:
    out = np.zeros(shape, dtype=values.dtype)
    np.add.at(out, index, values)
    return out


@pytest.mark.parametrize("on_gpu", [False, True], ids=["cpu", "gpu"])
@SETTINGS
@given(n=st.integers(0, 40), count=st.integers(1, 6), width=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1))
def test_segment_sum_is_its_twin_exactly_on_integer_values(gpu_or_stand_in, on_gpu, n, count, width,
                                                           seed):
    """Integer values sum exactly in any order, so any order must give the twin's bits."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, count, n)
    values = rng.integers(-50, 50, (n, width)).astype(np.float32)
    module = gpu_or_stand_in if on_gpu else np
    total = segment_sum(_on(module, values), _on(module, ids), count)
    assert total.dtype == np.float32 and total.shape == (count, width)
    np.testing.assert_array_equal(_host(total), _twin((count, width), ids, values))


def _pairwise(values: list) -> np.float32:
    """The tree of the GPU path: halves of sizes 2**k, the first half the larger."""
    if len(values) == 1:
        return values[0]
    half = 1 << (len(values) - 1).bit_length() - 1
    return np.float32(_pairwise(values[:half]) + _pairwise(values[half:]))


def test_the_gpu_adds_each_run_pairwise_in_index_order(gpu_or_stand_in):
    """Magnitudes 1e-3 to 1e8 make every order of addition give other bits: the GPU path
    must give the pairwise tree's over each id's rows in index order (rounding in float32
    after each addition), the same on every run."""
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 3, 300)
    values = (rng.standard_normal(300) * 10.0 ** rng.integers(-3, 9, 300)).astype(np.float32)
    expected = [_pairwise(list(values[ids == s])) for s in range(3)]
    for _ in range(3):
        total = segment_sum(gpu_or_stand_in.asarray(values[:, None]),
                            gpu_or_stand_in.asarray(ids), 3)
        assert _host(total)[:, 0].tolist() == expected


INDICES = {
    "rows": lambda rng: rng.integers(-4, 4, (3, 5)),
    "no_rows": lambda rng: rng.integers(0, 4, 0),
    "rows_then_slice": lambda rng: (rng.integers(0, 4, 7), slice(None)),
    "rows_then_ellipsis": lambda rng: (rng.integers(0, 4, 7), Ellipsis),
    "pairs": lambda rng: (rng.integers(0, 4, 9), rng.integers(0, 3, 9)),
    "slice_then_rows": lambda rng: (slice(None), rng.integers(0, 3, 8)),
    "mask": lambda rng: rng.random((4, 3)) < 0.5,
    "scalar_then_rows": lambda rng: (2, rng.integers(0, 3, 6)),
}


@pytest.mark.parametrize("on_gpu", [False, True], ids=["cpu", "gpu"])
@pytest.mark.parametrize("kind", INDICES)
def test_index_add_is_add_at_for_every_kind_of_index(gpu_or_stand_in, kind, on_gpu):
    rng = np.random.default_rng(len(kind))
    shape = (4, 3)
    index = INDICES[kind](rng)
    values = rng.integers(-9, 9, np.zeros(shape)[index].shape).astype(np.float64)
    module = gpu_or_stand_in if on_gpu else np
    on_device = tuple(_on(module, np.asarray(p)) if not isinstance(p, (slice, int, type(...)))
                      else p for p in (index if isinstance(index, tuple) else (index,)))
    total = index_add(shape, on_device if isinstance(index, tuple) else on_device[0],
                      _on(module, values))
    np.testing.assert_array_equal(_host(total), _twin(shape, index, values))


@pytest.mark.parametrize("on_gpu", [False, True], ids=["cpu", "gpu"])
def test_an_infinite_gradient_stays_in_its_row(gpu_or_stand_in, on_gpu):
    """No gradient is multiplied by zero (inf * 0 = NaN would reach every row)."""
    module = gpu_or_stand_in if on_gpu else np
    values = np.ones((6, 2), dtype=np.float32)
    values[4, 1] = np.inf
    ids = np.array([0, 2, 0, 1, 2, 2])
    total = _host(segment_sum(_on(module, values), _on(module, ids), 3))
    assert total.tolist() == [[2.0, 2.0], [1.0, 1.0], [3.0, np.inf]]


@pytest.mark.parametrize("on_gpu", [False, True], ids=["cpu", "gpu"])
def test_float16_rows_are_summed_in_float32(gpu_or_stand_in, on_gpu):
    """Steps of float16 are 2 wide at 2048: added in float16, 2048 + 0.5 and 2048 + 1
    round back to 2048, and eight halves shrink to 2 (2050 in the GPU's tree); in
    float32 the sum is 2052, which float16 holds exactly."""
    module = gpu_or_stand_in if on_gpu else np
    values = np.array([[2048.0]] + [[0.5]] * 8, dtype=np.float16)
    total = segment_sum(_on(module, values), _on(module, np.zeros(9, dtype=np.int64)), 1)
    assert total.dtype == np.float16 and _host(total).tolist() == [[2052.0]]


# ----------------------------------------------------------------------------- the switch


@pytest.fixture
def deterministic_mode():
    yield
    mg.use_deterministic_algorithms(False)


@pytest.mark.usefixtures("deterministic_mode")
def test_the_switch_reads_back_and_takes_only_bools():
    assert mg.are_deterministic_algorithms_enabled() is False
    mg.use_deterministic_algorithms(True, warn_only=True)
    assert mg.are_deterministic_algorithms_enabled() is True
    with pytest.raises(TypeError, match="mode must be a bool, got int"):
        mg.use_deterministic_algorithms(1)
    with pytest.raises(TypeError, match="warn_only must be a bool"):
        mg.use_deterministic_algorithms(True, warn_only="yes")
    mg.use_deterministic_algorithms(False)
    assert mg.are_deterministic_algorithms_enabled() is False


@pytest.mark.usefixtures("deterministic_mode")
def test_the_switch_leaves_cpu_scatter_alone():
    """NumPy writes repeated positions in order: the CPU's scatter is deterministic."""
    mg.use_deterministic_algorithms(True)
    out = mg.zeros(3).scatter(0, mg.tensor([1, 1]), mg.tensor([5.0, 7.0]))
    assert out.tolist() == [0.0, 7.0, 0.0]
