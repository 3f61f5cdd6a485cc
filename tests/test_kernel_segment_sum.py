"""The CPU's segment sum (minigrad/kernels/cpu/segment_sum.py) against its twin, NumPy's
add.at, bit for bit: float values whose every order of addition rounds differently, -0,
infinities and NaN, every integer type of ids, and the dispatcher in each kernel mode."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.kernels import mode
from minigrad.kernels.dispatch import cpu_kernels
from minigrad.kernels.segment_sum import add_at_twin, index_add, segment_sum

kernels = cpu_kernels("segment_sum")
needs_numba = pytest.mark.skipif(kernels is None, reason="Numba does not import")


def _bits(array: np.ndarray) -> np.ndarray:
    """The array's bytes as unsigned integers: equal bits, -0 apart from +0."""
    return array.view(np.uint32 if array.dtype == np.float32 else np.uint64)


def _kernel_sum(values: np.ndarray, ids: np.ndarray, count: int) -> np.ndarray:
    out = np.zeros((count, values.shape[1]), values.dtype)
    kernels.sum_segments(values, ids, out)
    return out


@needs_numba
@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 60), count=st.integers(1, 7), width=st.integers(1, 9),
       dtype=st.sampled_from([np.float32, np.float64]),
       id_type=st.sampled_from([np.int64, np.int32, np.uint8, np.uint64]),
       seed=st.integers(0, 2**32 - 1))
def test_the_kernel_adds_in_add_ats_order(n, count, width, dtype, id_type, seed):
    """Magnitudes from 1e-6 to 1e6 make every other order of addition round otherwise."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, count, n).astype(id_type)
    values = (rng.standard_normal((n, width)) * 10.0 ** rng.integers(-6, 7, (n, width)))
    values = values.astype(dtype)
    np.testing.assert_array_equal(_bits(_kernel_sum(values, ids, count)),
                                  _bits(add_at_twin((count, width), ids, values)))


@needs_numba
def test_zero_signs_infinities_and_nan_are_the_twins():
    """A segment of one -0 row sums to +0 (0 + -0), as add.at's; inf + -inf is NaN."""
    values = np.array([[-0.0, 1.0], [np.inf, -0.0], [-np.inf, np.nan], [2.0, -0.0]],
                      dtype=np.float32)
    ids = np.array([0, 1, 1, 3])
    total = _kernel_sum(values, ids, 4)
    with np.errstate(invalid="ignore"):
        twin = add_at_twin((4, 2), ids, values)
    np.testing.assert_array_equal(_bits(total[~np.isnan(total)]), _bits(twin[~np.isnan(twin)]))
    assert np.isnan(total).tolist() == np.isnan(twin).tolist() == [[False, False],
                                                                     [True, True],
                                                                     [False, False],
                                                                     [False, False]]
    assert not np.signbit(total[0, 0]) and not np.signbit(total[3, 1])


@needs_numba
@pytest.mark.parametrize("kernel_mode", ["numpy", "numba", "auto"])
def test_the_dispatcher_gives_the_twins_bits_in_every_mode(kernel_mode):
    """An embedding's gradient: (3, 5) ids into 11 rows of width 4, strided values."""
    rng = np.random.default_rng(3)
    ids = rng.integers(-11, 11, (3, 5))
    grad = rng.standard_normal((3, 5, 8)).astype(np.float32)[:, :, ::2]  # not contiguous
    with mode(kernel_mode):
        total = index_add((11, 4), ids, grad)
    np.testing.assert_array_equal(_bits(total), _bits(add_at_twin((11, 4), ids % 11, grad)))


@needs_numba
def test_float16_goes_through_float32_and_an_empty_batch_gives_zeros():
    values = np.array([[2048.0]] + [[0.5]] * 8, dtype=np.float16)
    with mode("numba"):
        assert segment_sum(values, np.zeros(9, np.int64), 1).tolist() == [[2052.0]]
        empty = segment_sum(np.zeros((0, 3), np.float32), np.zeros(0, np.int64), 2)
    assert empty.dtype == np.float32 and empty.tolist() == [[0.0] * 3] * 2
