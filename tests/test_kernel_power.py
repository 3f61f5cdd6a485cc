"""The pow dispatcher (minigrad/kernels/power.py) against the exact power, and against its
twin (NumPy's `**`) on every special value.

The exact power is the twin run in a wider dtype (float64 for float16 and float32, long
double for float64) on the same base and the same exponent, cast to the input's dtype as
NumPy casts it. Each route has its stated bound, in units in the last place of the result
(the spacing of the dtype at the exact value, so 2**-149 for every float32 subnormal):

    products (2, -1: one rounding; 3: < 1.5; 4, -2: < 2.5), sqrt for 0.5: exact rounding,
    |x| ** p with the sign put back: NumPy's own pow, below 1 ulp,
    float16: computed in float32, so 0.5 ulp of float16 plus the float32 route's error.

Non-finite and zero results must equal the twin's, sign included, and NaN stay NaN.
"""
import numpy as np
import pytest
from helpers import FEW_EXAMPLES, arrays, floats, make_tensor, nonzero, positive, shapes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.kernels import mode
from minigrad.kernels.power import power, power_twin

DTYPES = [np.float16, np.float32, np.float64]
ROUTE_ULPS = {0: 0.0, 1: 0.0, 2: 0.5, -1: 0.5, 3: 1.5, 4: 2.5, -2: 2.5, 0.5: 0.5}
MAGNITUDE_ULPS = 1.0
# every route: the products, sqrt, and |x| ** p for odd, even and non-integer exponents,
# a float64-odd integer that float32 rounds to an even one, and the non-finite exponents
EXPONENTS = [-2, -1, 0, 1, 2, 3, 4, 3.0, 0.5, 5, -3, 6, 2.7, -1.5, -0.5, 1 / 3, 1e10,
             2**24 + 1, np.inf, -np.inf, np.nan]
SPECIALS = [0.0, 1.0, 0.5, 1.5, 3.5, 10.0, 2e19, np.inf, np.nan]  # and their negatives
FAST = settings(max_examples=60, deadline=None)


def _wide(dtype):
    return np.longdouble if dtype == np.float64 else np.float64


def _cast_exponent(exponent, dtype):
    """The exponent NumPy computes x ** exponent with for an array x of `dtype`."""
    return np.asarray(exponent, dtype=dtype)


def _bound(exponent, dtype) -> float:
    """The stated error of the route that `exponent` takes, in ulps of `dtype`."""
    float32_bound = ROUTE_ULPS.get(exponent, MAGNITUDE_ULPS)
    if dtype == np.float16:  # one more rounding, of a float32 result 2**13 times finer
        return 0.5 + float32_bound * 2.0**-13
    return float32_bound


def _exact(x, exponent, dtype):
    """x ** exponent in the wider dtype; 0.5 as sqrt, which NumPy's float32/float64 pow
    and PyTorch's are at 0.5 (long double's powl is C's pow: (-inf) ** 0.5 = +inf)."""
    wide = x.astype(_wide(dtype))
    if exponent == 0.5:
        return np.sqrt(wide)
    return power_twin(wide, _cast_exponent(exponent, dtype).astype(wide.dtype))


def _check_against_exact(x, exponent, dtype):
    actual = power(x, exponent)
    wide = _wide(dtype)
    exact = _exact(x, exponent, dtype)
    rounded = exact.astype(dtype)
    assert actual.dtype == dtype and actual.shape == rounded.shape
    nan = np.isnan(rounded)
    np.testing.assert_array_equal(np.isnan(actual), nan, err_msg=f"NaN, x ** {exponent}")
    special = ~nan & (~np.isfinite(rounded) | (rounded == 0))
    np.testing.assert_array_equal(actual[special], rounded[special],
                                  err_msg=f"non-finite or zero results of x ** {exponent}")
    np.testing.assert_array_equal(np.signbit(actual[special]), np.signbit(rounded[special]),
                                  err_msg=f"signs of zeros and infinities, x ** {exponent}")
    ordinary = ~nan & ~special
    ulp = np.spacing(np.abs(rounded[ordinary])).astype(wide)
    errors = np.abs(actual[ordinary].astype(wide) - exact[ordinary]) / ulp
    bound = _bound(exponent, dtype)
    assert errors.max(initial=0) <= bound, (
        f"x ** {exponent} ({np.dtype(dtype).name}): {errors.max():.3g} ulps at "
        f"x = {x[ordinary][np.argmax(errors)]!r}, stated bound {bound}")


def _equal_with_signs(actual, expected):
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(actual), nan)
    np.testing.assert_array_equal(actual[~nan], expected[~nan])
    np.testing.assert_array_equal(np.signbit(actual[~nan]), np.signbit(expected[~nan]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent", EXPONENTS)
def test_special_bases_match_the_twin_and_the_exact_power(dtype, exponent):
    values = np.array(SPECIALS + [-v for v in SPECIALS] + [np.finfo(dtype).smallest_subnormal,
                      -np.finfo(dtype).tiny, np.finfo(dtype).max, -np.finfo(dtype).max])
    with np.errstate(all="ignore"):
        x = values.astype(dtype)
        _check_against_exact(x, exponent, dtype)
        twin = power_twin(x.astype(np.float32) if dtype == np.float16 else x,
                          _cast_exponent(exponent, dtype))
        actual = power(x, exponent)
    special = ~np.isfinite(twin) | (twin == 0) | (np.abs(x) == 1)
    _equal_with_signs(actual[special], twin[special].astype(dtype))


def _bases(dtype):
    """Arrays of bases of either sign: most of moderate size, some anywhere in the dtype's
    range (subnormals, overflow, infinities and NaN included)."""
    bits = np.finfo(dtype).bits
    moderate = st.floats(-8, 8, width=bits)
    anywhere = st.floats(width=bits, allow_nan=True, allow_infinity=True)
    return hnp.arrays(dtype, hnp.array_shapes(max_dims=2, max_side=6),
                      elements=st.one_of(moderate, moderate, anywhere))


@FAST
@given(data=st.data(), dtype=st.sampled_from(DTYPES), exponent=st.sampled_from(EXPONENTS))
def test_every_route_within_its_stated_ulps(data, dtype, exponent):
    x = data.draw(_bases(dtype))
    with np.errstate(all="ignore"):
        _check_against_exact(x, exponent, dtype)


@FAST
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_an_array_of_exponents_with_every_parity(data, dtype):
    """Tensor exponents: odd, even, non-integer and non-finite entries side by side, and
    broadcast against the base."""
    x = data.draw(_bases(dtype))
    exponents = data.draw(hnp.arrays(dtype, x.shape[-1:], elements=st.sampled_from(
        [3.0, -3.0, 2.0, -2.0, 0.0, 2.7, -1.5, 0.5, np.inf, -np.inf, np.nan])))
    wide = _wide(dtype)
    with np.errstate(all="ignore"):
        actual = power(x, exponents)
        exact = power_twin(x.astype(wide), exponents.astype(wide))
        rounded = exact.astype(dtype)
    special = np.isnan(rounded) | ~np.isfinite(rounded) | (rounded == 0)
    _equal_with_signs(actual[special], rounded[special])
    ulp = np.spacing(np.abs(rounded[~special])).astype(wide)
    errors = np.abs(actual[~special].astype(wide) - exact[~special]) / ulp
    assert errors.max(initial=0) <= MAGNITUDE_ULPS


def test_numpy_mode_takes_the_twin():
    x = np.array([-2.0, 0.5, 3.0], np.float32)
    with mode("numpy"), np.errstate(invalid="ignore"):
        for exponent in (3, 2.7):
            _equal_with_signs(power(x, exponent), power_twin(x, exponent))


@pytest.mark.parametrize("exponent", [2, 3, 4, 5, -2, 0.5, -1.5, 2.7])
@FEW_EXAMPLES
@given(data=st.data(), shape=shapes())
def test_gradients_through_every_route(exponent, data, shape):
    """First and second derivatives of x ** p, whose backward takes a route too (x ** 4
    for p = 5, |x| ** 1.7 for p = 2.7), in float64; integer exponents on bases of either
    sign."""
    if float(exponent).is_integer():
        elements = floats() if exponent > 0 else nonzero(0.5)
    else:
        elements = positive()
    x = make_tensor(data.draw(arrays(shape, elements)), requires_grad=True)
    assert mg.autograd.gradcheck(lambda t: t**exponent, x)
    assert mg.autograd.gradgradcheck(lambda t: t**exponent, x)
