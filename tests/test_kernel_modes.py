"""The kernel switches and the kernels' building blocks: the mode (MINIGRAD_KERNELS,
kernels.mode), the fallback without Numba, the compile cache, the vector width, and the
accuracy of fast_exp and of float16 computed in float32. (Each kernel against its twin:
test_kernels.py.)"""

import os
import subprocess
import sys

import numpy as np
import pytest

import minigrad.kernels as kernels
from minigrad.kernels.softmax import _TWINS


@pytest.fixture(autouse=True)
def _numba_mode():
    with kernels.mode("numba"):
        yield


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-7), (np.float64, 1e-15)])
def test_fast_exp_error_against_numpy(dtype, rtol):
    from minigrad.kernels.cpu import softmax as cpu_softmax

    # log_softmax_backward with g = e_0 returns -exp(z) in every column but the first
    low, high = (-87.3, 88.7) if dtype == np.float32 else (-708.3, 709.7)
    z = np.linspace(low, high, 200_001).astype(dtype).reshape(1, -1)
    g = np.zeros_like(z)
    g[0, 0] = 1
    out = np.empty_like(z)
    cpu_softmax.log_softmax_backward(z, g, out)
    expected = np.exp(z.astype(np.float64))[0, 1:]
    assert np.max(np.abs(-out[0, 1:] - expected) / expected) < rtol


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-7), (np.float64, 1e-15)])
def test_vector_fast_exp_against_numpy(dtype, rtol):
    """fast_exp on simd vectors (the softmax forward's exp): error over the range of normal
    results, its ends, and the out-of-range conventions (0, inf, NaN kept)."""
    from numba import njit

    from minigrad.kernels.cpu import simd
    from minigrad.kernels.cpu.fast_exp import fast_exp

    @njit
    def exp_rows(x, out):
        for j in range(0, x.shape[1], simd.lanes(x)):
            simd.store(out, 0, j, fast_exp(simd.load(x, 0, j)))

    info = np.finfo(dtype)
    low, high = np.log(info.tiny.astype(np.float64)), np.log(info.max.astype(np.float64))
    inside = np.linspace(low, high, 200_000).astype(dtype)
    # lengths that are a multiple of every vector width (8 to 16 lanes): whole stores only
    inside = inside[(inside >= low) & (inside <= high)][:199_984].reshape(1, -1)
    out = np.empty_like(inside)
    exp_rows(inside, out)
    expected = np.exp(inside.astype(np.float64))
    assert np.all(np.isfinite(out)) and np.max(np.abs(out - expected) / expected) < rtol
    outside = np.tile([[-np.inf, -1e4, low - 1, np.nan, high + 1, 1e4, np.inf, 0]], 2)
    out = np.empty_like(outside.astype(dtype))
    exp_rows(outside.astype(dtype), out)
    np.testing.assert_array_equal(out, np.tile([[0, 0, 0, np.nan, np.inf, np.inf, np.inf, 1]], 2))


def test_float16_is_computed_in_float32():
    x = np.zeros((2, 70_000), dtype=np.float16)  # a float16 sum of 70,000 exps overflows
    y = kernels.softmax(x)
    assert y.dtype == np.float16
    # 1 / 70,000 is subnormal in float16: within one unit of its last place
    np.testing.assert_allclose(y.astype(np.float32), 1 / 70_000, atol=6e-8)


def test_numpy_mode_takes_the_twin(monkeypatch):
    calls = []
    monkeypatch.setitem(_TWINS, "softmax", lambda a: calls.append(a) or a)
    with kernels.mode("numpy"):
        kernels.softmax(np.ones((4, 4)))
    assert len(calls) == 1


def test_mode_switches():
    assert kernels.get_mode() == "numba"
    with kernels.mode("numpy"):
        assert kernels.get_mode() == "numpy"
        with pytest.raises(ValueError, match="kernel mode"):
            kernels.set_mode("fast")
        assert kernels.get_mode() == "numpy"
    assert kernels.get_mode() == "numba"
    with pytest.raises(RuntimeError), kernels.mode("auto"):
        raise RuntimeError
    assert kernels.get_mode() == "numba"


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    "value, expected", [("numpy", "numpy"), (" NUMBA ", "numba"), ("", "auto"), ("fast", None)]
)
def test_environment_variable_sets_mode(value, expected):
    result = _python("import minigrad.kernels as k; print(k.get_mode())", MINIGRAD_KERNELS=value)
    if expected is None:
        assert "kernel mode must be one of" in result.stderr
    else:
        assert result.stdout.strip() == expected


def test_import_does_not_import_numba():
    result = _python("import minigrad.kernels, sys; assert 'numba' not in sys.modules")
    assert result.returncode == 0, result.stderr


_WITHOUT_NUMBA = """
import sys
class NoNumba:
    def find_spec(self, name, path=None, target=None):
        if name == "numba" or name.startswith("numba."):
            raise ImportError("numba is not installed here")
sys.meta_path.insert(0, NoNumba())
import warnings
import numpy as np
import minigrad as mg
import minigrad.nn.functional as F
warnings.simplefilter("error")  # the one warning is the fallback's, checked below
x = mg.randn(64, 300, requires_grad=True)
def loss_of(x):
    hidden = F.gelu(F.layer_norm(x, (300,)))
    return F.cross_entropy(hidden.softmax(-1), mg.zeros(64, dtype=mg.int64))
try:
    loss_of(x)
except RuntimeWarning as warning:
    print("warned:", warning)
warnings.simplefilter("ignore")
loss_of(x).backward()
print("ok", tuple(x.grad.shape))
"""


def test_auto_mode_falls_back_to_the_twins_without_numba():
    result = _python(_WITHOUT_NUMBA, MINIGRAD_KERNELS="auto")
    assert result.returncode == 0, result.stderr
    assert "warned: minigrad: Numba cannot be imported" in result.stdout
    assert "ok (64, 300)" in result.stdout


def test_numba_mode_without_numba_says_so():
    result = _python(_WITHOUT_NUMBA, MINIGRAD_KERNELS="numba")
    assert result.returncode != 0
    assert "MINIGRAD_KERNELS=numba, but Numba cannot be imported" in result.stderr


def test_softmax_kernels_at_the_other_vector_width(tmp_path):
    """The vector width follows the machine (32 bytes with AVX2, 64 with AVX-512): the
    kernels at the other width (compiled in a private cache), against the twins, on rows
    shorter than, equal to and longer than either width."""
    code = """
import numpy as np
from minigrad.kernels.cpu import simd
simd.VECTOR_BYTES = 96 - simd.VECTOR_BYTES
from minigrad.kernels.cpu import softmax as cpu
from minigrad.kernels.softmax import log_softmax_twin, softmax_twin
rng = np.random.default_rng(0)
worst = 0.0
for dtype in (np.float32, np.float64):
    for n in (1, 3, 4, 7, 8, 9, 15, 16, 17, 20, 31, 32, 33, 1000):
        x = (rng.standard_normal((50, n)) * 5).astype(dtype)
        for kernel, twin in ((cpu.softmax, softmax_twin), (cpu.log_softmax, log_softmax_twin)):
            out = np.empty_like(x)
            kernel(x, out)
            expected = twin(x)
            worst = max(worst, float(np.max(np.abs(out - expected) / (1 + np.abs(expected)))))
print(simd.VECTOR_BYTES, worst)
"""
    result = _python(code, NUMBA_CACHE_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    from minigrad.kernels.cpu import simd

    width, worst = result.stdout.split()
    assert int(width) == 96 - simd.VECTOR_BYTES and float(worst) < 1e-5


def test_kernels_compile_without_a_writable_cache():
    # as on a read-only install: Numba finds no cache location (simulated: as root every
    # folder is writable), so the kernels compile in memory after one warning
    code = """
import warnings
import numba.core.caching as caching
caching.CacheImpl._locator_classes = []
import numpy as np
import minigrad.kernels as kernels
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    y = kernels.softmax(np.ones((4, 8), np.float32))
    kernels.log_softmax(np.ones((4, 8), np.float32))
from minigrad.kernels.erf import erf
messages = [str(w.message) for w in caught if "without a cache" in str(w.message)]
print(len(messages), float(y.sum()), round(float(erf(np.array([0.5]))[0]), 6))
"""
    result = _python(code, MINIGRAD_KERNELS="numba")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "4.0", "0.5205"]  # erf(0.5), its kernel too
