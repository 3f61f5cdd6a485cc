"""The erf kernel (kernels/cpu/erf.py) and its reference twin (kernels/erf.py): each against
math.erf, and against each other, in float32 and float64, on drawn values and at the edges
(0, -0, +-inf, NaN, the largest finite values, subnormals, either side of the switch
between the two polynomials at |x| = 1 and of the saturation at |x| = 6); the dispatcher
in each kernel mode and on a machine without Numba; and the ops built on it."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.kernels as kernels
from minigrad.kernels import dispatch
from minigrad.kernels.erf import erf, erf_twin

DTYPES = [np.float32, np.float64]
# float64: math.erf and the formula are each within 1 ulp of erf; float32: the formula's
# float64 value (2e-9 relative error) rounded once, against math.erf's rounded once
ULPS = {np.float32: 1, np.float64: 2}


def _edges(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    tiny = info.smallest_subnormal
    around = [np.nextafter(dtype(v), dtype(w)) for v in (1, 6) for w in (0, 7)]
    values = [0.0, tiny, 3 * tiny, info.tiny, 1e-20, 0.5, 1.0, 1.5, 3.0, 5.9, 6.0, 27.0, info.max,
              np.inf, *around]
    positive = np.array(values, dtype=dtype)
    return np.concatenate([positive, -positive, np.array([np.nan], dtype=dtype)])


def _math_erf(x: np.ndarray) -> np.ndarray:
    """math.erf of every element, rounded once to x's dtype."""
    values = [math.erf(v) for v in x.astype(np.float64).reshape(-1)]
    return np.array(values, dtype=np.float64).astype(x.dtype).reshape(x.shape)


def _assert_close_in_ulps(actual, expected, ulps, what):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, what
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=what)
    finite = ~np.isnan(expected)
    gap = np.abs(actual[finite].astype(np.float64) - expected[finite].astype(np.float64))
    allowed = ulps * np.spacing(np.abs(expected[finite]))
    bad = gap > allowed
    assert not bad.any(), (f"{what}: {actual[finite][bad][:4]} against "
                           f"{expected[finite][bad][:4]}")


def _values(dtype):
    width = 32 if dtype == np.float32 else 64
    elements = st.one_of(st.floats(-7, 7, width=width),
                         st.floats(width=width, allow_nan=True, allow_infinity=True))
    return hnp.arrays(dtype, hnp.array_shapes(max_dims=3, max_side=9), elements=elements)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["numba", "numpy"])
def test_erf_at_the_edges_matches_math_erf(dtype, mode):
    x = _edges(dtype)
    with kernels.mode(mode):
        out = erf(x)
    _assert_close_in_ulps(out, _math_erf(x), ULPS[dtype], f"erf {mode}")
    # the signs of zero and of the saturated values
    np.testing.assert_array_equal(np.signbit(out), np.signbit(x) & ~np.isnan(x))
    assert out[0] == 0 and out[len(out) // 2] == 0


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_erf_kernel_matches_its_twin_and_math_erf(dtype, data):
    x = data.draw(_values(dtype))
    if data.draw(st.booleans()):
        x = x.T  # a transposed view: the dispatcher makes it contiguous
    with kernels.mode("numba"):
        out = erf(x)
    _assert_close_in_ulps(out, _math_erf(x), ULPS[dtype], "kernel against math.erf")
    _assert_close_in_ulps(out, erf_twin(x), ULPS[dtype], "kernel against its twin")
    _assert_close_in_ulps(erf_twin(x), _math_erf(x), ULPS[dtype], "twin against math.erf")


def test_erf_of_0d_float16_and_a_numpy_scalar():
    half = erf(np.asarray(0.75, dtype=np.float16))
    assert half.dtype == np.float16 and half.shape == ()
    assert half == np.float16(math.erf(0.75))
    scalar = erf(np.float64(0.75))
    assert scalar.shape == () and math.isclose(float(scalar), math.erf(0.75), rel_tol=1e-15)


def test_erf_without_numba_takes_the_twin(monkeypatch):
    """As on a machine without Numba: auto mode warns once and computes with the twin."""
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.delitem(sys.modules, "minigrad.kernels.cpu.erf", raising=False)
    monkeypatch.setattr(dispatch, "_loaded", {})
    x = np.linspace(-3, 3, 101, dtype=np.float32)
    with kernels.mode("auto"), pytest.warns(RuntimeWarning, match="Numba cannot be imported"):
        out = erf(x)
    np.testing.assert_array_equal(out, erf_twin(x))
    with kernels.mode("numba"), pytest.raises(RuntimeError, match="MINIGRAD_KERNELS=numba"):
        monkeypatch.setattr(dispatch, "_loaded", {})
        erf(x)


@pytest.mark.parametrize("dtype", [mg.float32, mg.float64])
@pytest.mark.parametrize("mode", ["numba", "numpy"])
def test_erf_and_gelu_ops_in_each_kernel_mode(dtype, mode):
    values = np.array([-7.0, -1.0, -0.3, 0.0, 0.3, 1.0, 2.5, 7.0])
    x = mg.tensor(values, dtype=dtype, requires_grad=True)
    with kernels.mode(mode):
        y = mg.nn.functional.gelu(x)
        y.backward(mg.ones_like(y))
        e = mg.erf(x.detach())
    rtol = 1e-6 if dtype is mg.float32 else 1e-14
    expected_erf = np.array([math.erf(v) for v in values])
    np.testing.assert_allclose(e.numpy(), expected_erf, rtol=rtol, atol=rtol)
    cdf = 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in values]))
    np.testing.assert_allclose(y.numpy(), values * cdf, rtol=rtol, atol=rtol)
    derivative = cdf + values * np.exp(-values**2 / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(x.grad.numpy(), derivative, rtol=rtol, atol=rtol)
