"""The sum over leading axes (minigrad/kernels/leading_sum.py): its Numba kernel against
its twin, NumPy's own sum, bit for bit.

The kernel is worth having only if it changes no bit of any result: a bias's gradient must
be what it was. So every comparison here is of bit patterns (-0 is not +0), except that a
NaN need only meet a NaN: which of two NaNs survives is not part of the contract (see
kernels/cpu/leading_sum.py). Inputs the kernel must not take (width 1, which NumPy sums
pairwise; strided, reversed and Fortran-ordered layouts) must still equal the twin through
the dispatcher.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.kernels import mode
from minigrad.kernels.dispatch import cpu_kernels
from minigrad.kernels.leading_sum import leading_sum, leading_sum_twin

DTYPES = [np.float32, np.float64]
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]
LAYOUTS = ("contiguous", "fortran", "strided", "reversed")
FAST = settings(max_examples=60, deadline=None)


def assert_same_bits(got, want) -> None:
    """Same dtype, shape and bit pattern at every position where not both are NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.shape, want.shape)
    unsigned = np.dtype(f"u{got.dtype.itemsize}")
    differ = got.view(unsigned) != want.view(unsigned)
    differ &= ~(np.isnan(got) & np.isnan(want))
    assert not differ.any(), f"{got[differ]} != {want[differ]}"


@st.composite
def summed_arrays(draw):
    """(x, count): x of 1-4 dims in one of LAYOUTS, its values of every magnitude and
    the special ones, and count in 1..ndim (count == ndim leaves width 1)."""
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(1, 4))
    leading = draw(hnp.array_shapes(min_dims=ndim - 1, max_dims=ndim - 1, min_side=1,
                                    max_side=6))
    shape = leading + (draw(st.integers(1, 40)),)  # widths past one vector register
    bits = np.dtype(dtype).itemsize * 8
    values = st.one_of(st.floats(width=bits), st.sampled_from(SPECIALS))
    x = draw(hnp.arrays(dtype, shape, elements=values))
    return _in_layout(x, draw(st.sampled_from(LAYOUTS))), draw(st.integers(1, ndim))


def _in_layout(x, layout):
    """x's values in another memory layout (C-contiguous only for "contiguous" and
    arrays too small to tell)."""
    if layout == "fortran":
        return np.asfortranarray(x)
    if layout == "strided":  # every other row of an array twice as tall
        tall = np.zeros((2 * x.shape[0],) + x.shape[1:], x.dtype)
        tall[::2] = x
        return tall[::2]
    if layout == "reversed":
        return x[::-1]
    return x


def _sum_in_numba_mode(x, count):
    with mode("numba"), np.errstate(over="ignore", invalid="ignore"):
        return leading_sum(x, count)


def _twin(x, count):
    with np.errstate(over="ignore", invalid="ignore"):
        return leading_sum_twin(x, count)


@FAST
@given(summed_arrays())
def test_numba_mode_equals_the_twin_bit_for_bit(case):
    x, count = case
    assert_same_bits(_sum_in_numba_mode(x, count), _twin(x, count))


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_kernel_adds_in_numpys_order(dtype):
    """Columns whose sum depends on the order: -0s (NumPy starts from +0), an infinity
    cancelled into NaN, a large value that swallows small ones, and 512 random rows."""
    columns = [[-0.0, -0.0, -0.0], [np.inf, 1.0, -np.inf], [1.0, 2.0**60, -(2.0**60)],
               [2.0**60, 1.0, -(2.0**60)]]
    x = np.array(columns, dtype).T
    assert_same_bits(_sum_in_numba_mode(x, 1), _twin(x, 1))
    assert_same_bits(_sum_in_numba_mode(x[:1], 1), _twin(x[:1], 1))  # one row: 0 + x[0]
    x = np.random.default_rng(0).standard_normal((512, 3, 7)).astype(dtype)
    assert_same_bits(_sum_in_numba_mode(x, 2), _twin(x, 2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_column_keeps_numpys_pairwise_sum(dtype):
    """NumPy sums a single column pairwise, so the row-by-row kernel would differ there
    (this column tells the two orders apart); the dispatcher must leave it to the twin."""
    column = np.random.default_rng(1).standard_normal((4096, 1)).astype(dtype)
    row_by_row = np.zeros(1, dtype)
    for row in column:
        row_by_row = row_by_row + row
    assert not np.array_equal(row_by_row, column.sum(axis=0))
    assert_same_bits(_sum_in_numba_mode(column, 1), _twin(column, 1))


class _Spy:
    """Stands in for the kernel and counts its calls."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, 0

    def __call__(self, x, out):
        self.calls += 1
        self.kernel(x, out)


@pytest.fixture
def kernel_calls(monkeypatch):
    kernels = cpu_kernels("leading_sum")
    spy = _Spy(kernels.sum_rows)
    monkeypatch.setattr(kernels, "sum_rows", spy)
    return spy


def test_auto_mode_takes_the_kernel_for_a_bias_gradient(kernel_calls):
    g = np.random.default_rng(2).standard_normal((512, 64)).astype(np.float32)
    with mode("auto"):
        assert_same_bits(leading_sum(g, 1), g.sum(axis=0))
    assert kernel_calls.calls == 1


@pytest.mark.parametrize("shape, count, layout", [
    ((512, 1), 1, "contiguous"),  # width 1: NumPy's pairwise sum
    ((64, 8, 1), 2, "contiguous"),
    ((512, 64), 1, "fortran"),
    ((512, 64), 1, "strided"),
])
def test_the_kernel_is_not_taken_where_its_order_is_not_numpys(kernel_calls, shape, count,
                                                                layout):
    x = _in_layout(np.random.default_rng(3).standard_normal(shape), layout)
    with mode("numba"):
        assert_same_bits(leading_sum(x, count), x.sum(axis=tuple(range(count))))
    assert kernel_calls.calls == 0


# ----------------------------------------------------------------------------- public API


def _tensor(array, requires_grad=False):
    return mg.tensor(array, requires_grad=requires_grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernels", ["auto", "numba"])
def test_sums_over_leading_dims_equal_numpys(kernel_calls, dtype, kernels):
    x = np.random.default_rng(4).standard_normal((32, 16, 64)).astype(dtype)
    with mode(kernels):
        assert_same_bits(_tensor(x).sum(0).numpy(), x.sum(axis=0))
        assert_same_bits(_tensor(x).sum((1, 0)).numpy(), x.sum(axis=(0, 1)))
        assert_same_bits(_tensor(x).sum(0, keepdim=True).numpy(), x.sum(axis=0, keepdims=True))
        assert_same_bits(_tensor(x).sum((0, 1), keepdim=True).numpy(),
                         x.sum(axis=(0, 1), keepdims=True))
        assert_same_bits(_tensor(x).sum(1).numpy(), x.sum(axis=1))  # not leading: NumPy's
    assert kernel_calls.calls == 4


@pytest.mark.parametrize("dtype", DTYPES + [np.float16])
@pytest.mark.parametrize("bias_shape, summed", [
    ((64,), (0, 1)), ((1, 64), (0, 1)), ((1, 1, 64), (0, 1)), ((16, 64), (0,)),
])
def test_a_broadcast_bias_gradient_equals_numpys_sum(kernel_calls, dtype, bias_shape, summed):
    """The engine sums the gradient of a broadcast input back to its shape (SumToShape):
    over leading dims only, here, whether they were added by the broadcast or kept as 1."""
    rng = np.random.default_rng(5)
    x = _tensor(rng.standard_normal((32, 16, 64)).astype(dtype))
    bias = _tensor(rng.standard_normal(bias_shape).astype(dtype), requires_grad=True)
    g = rng.standard_normal((32, 16, 64)).astype(dtype)
    with mode("auto"):
        (x + bias).backward(_tensor(g))
    assert_same_bits(bias.grad.numpy(), g.sum(axis=summed).reshape(bias_shape))
    assert kernel_calls.calls == (0 if dtype == np.float16 else 1)  # float16: NumPy's sum


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x_shape", [(512, 32), (8, 64, 32)])
def test_linear_bias_gradient_equals_numpys_sum(kernel_calls, dtype, x_shape):
    rng = np.random.default_rng(6)
    x = _tensor(rng.standard_normal(x_shape).astype(dtype))
    weight = _tensor(rng.standard_normal((64, 32)).astype(dtype), requires_grad=True)
    bias = _tensor(rng.standard_normal(64).astype(dtype), requires_grad=True)
    g = rng.standard_normal(x_shape[:-1] + (64,)).astype(dtype)
    with mode("auto"):
        F.linear(x, weight, bias).backward(_tensor(g))
    assert_same_bits(bias.grad.numpy(), g.reshape(-1, 64).sum(axis=0))
    assert kernel_calls.calls == 1
