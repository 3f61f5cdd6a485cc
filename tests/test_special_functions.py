"""minigrad.backend.special.erf, through its Numba ufunc and through its fallback for
machines without Numba (math.erf element by element): values, dtype and 0-d inputs, and
the exact GELU built on it."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.backend import special

# float32 and float16 results are math.erf's float64 value rounded once to the dtype
TOLERANCE = {np.float64: 1e-15, np.float32: 1e-7, np.float16: 1e-3}


@pytest.fixture(params=["numba", "without numba"])
def erf_path(request, monkeypatch):
    """erf built afresh, with Numba or as on a machine without it (importing numba
    raises ImportError)."""
    if request.param == "without numba":
        monkeypatch.setitem(sys.modules, "numba", None)
    special._erf_ufunc.cache_clear()
    yield request.param
    special._erf_ufunc.cache_clear()  # rebuilt with Numba on next use


def test_the_fallback_is_taken_without_numba(erf_path):
    uses_fallback = special._erf_ufunc() is special._erf_by_element
    assert uses_fallback == (erf_path == "without numba")


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
def test_erf_values_dtype_and_shape(erf_path, dtype, shape):
    x = np.linspace(-2.5, 3.0, int(np.prod(shape))).reshape(shape).astype(dtype)
    out = special.erf(x)
    expected = np.array([math.erf(v) for v in x.reshape(-1).astype(np.float64)])
    assert np.shape(out) == shape
    assert out.dtype == dtype
    np.testing.assert_allclose(np.asarray(out, dtype=np.float64).reshape(-1), expected,
                               rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [mg.float64, mg.float32])
def test_gelu_and_erf_of_a_0d_tensor(erf_path, dtype):
    """A 0-d input gives a 0-d tensor, with and without Numba (the element-by-element
    fallback once returned a bare Python float here)."""
    x = mg.tensor(0.75, dtype=dtype, requires_grad=True)
    y = F.gelu(x)
    assert y.shape == () and y.dtype is dtype
    expected = 0.75 * 0.5 * (1 + math.erf(0.75 / math.sqrt(2)))
    assert math.isclose(y.item(), expected, rel_tol=1e-6)
    y.backward()
    derivative = 0.5 * (1 + math.erf(0.75 / math.sqrt(2))) + \
        0.75 * math.exp(-0.75**2 / 2) / math.sqrt(2 * math.pi)
    assert math.isclose(x.grad.item(), derivative, rel_tol=1e-6)
    assert math.isclose(mg.erf(mg.tensor(0.75, dtype=dtype)).item(), math.erf(0.75),
                        rel_tol=1e-6)
