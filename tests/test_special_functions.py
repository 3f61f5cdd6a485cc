"""erf and the exact GELU built on it, with Numba and as on a machine without it (the
twin of minigrad/kernels/erf.py): values, dtype and 0-d inputs (tests/test_erf.py checks
the kernel and its twin in ulps)."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import minigrad as mg
import minigrad.kernels as kernels
import minigrad.nn.functional as F
from minigrad.kernels import dispatch
from minigrad.kernels.erf import erf

# float32 and float16 results are math.erf's float64 value rounded once to the dtype
TOLERANCE = {np.float64: 1e-15, np.float32: 1e-7, np.float16: 1e-3}


@pytest.fixture(params=["numba", "without numba"])
def erf_path(request, monkeypatch):
    """The kernel mode to use: Numba's kernel, or auto mode as on a machine without Numba
    (importing numba raises ImportError, so the twin computes, after one warning)."""
    if request.param == "without numba":
        monkeypatch.setitem(sys.modules, "numba", None)
        monkeypatch.delitem(sys.modules, "minigrad.kernels.cpu.erf", raising=False)
        monkeypatch.setattr(dispatch, "_loaded", {})
        with kernels.mode("auto"), pytest.warns(RuntimeWarning, match="Numba cannot"):
            yield request.param
    else:
        with kernels.mode("numba"):
            yield request.param


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
def test_erf_values_dtype_and_shape(erf_path, dtype, shape):
    x = np.linspace(-2.5, 3.0, int(np.prod(shape))).reshape(shape).astype(dtype)
    out = erf(x)
    expected = np.array([math.erf(v) for v in x.reshape(-1).astype(np.float64)])
    assert np.shape(out) == shape
    assert out.dtype == dtype
    np.testing.assert_allclose(np.asarray(out, dtype=np.float64).reshape(-1), expected,
                               rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [mg.float64, mg.float32])
def test_gelu_and_erf_of_a_0d_tensor(erf_path, dtype):
    """A 0-d input gives a 0-d tensor, with and without Numba (an element-by-element
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
