"""Every Numba kernel against its reference twin, plus the kernel switches.

Kernels are reached through the public dispatchers in "numba" mode, so the same tests
also cover the reshaping, contiguity and 1-D/batched logic of the dispatchers.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad.kernels as kernels
from minigrad.kernels.cross_entropy import cross_entropy_backward_twin, cross_entropy_twin
from minigrad.kernels.layer_norm import layer_norm_backward_twin, layer_norm_twin
from minigrad.kernels.softmax import (
    _TWINS,
    log_softmax_backward_twin,
    log_softmax_twin,
    softmax_backward_twin,
    softmax_twin,
)

DTYPES = [np.float32, np.float64]
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}
FAST = settings(max_examples=40, deadline=None)


@pytest.fixture(autouse=True)
def _numba_mode():
    with kernels.mode("numba"):
        yield


@st.composite
def logits(draw, dtype):
    """Arrays of 1-3 dims (rows of length 1 included) with values up to +-1e4, some -inf
    entries, sometimes a fully -inf row, and sometimes a non-contiguous view."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9))
    values = st.floats(-1e4, 1e4, width=32 if dtype == np.float32 else 64)
    x = draw(hnp.arrays(dtype, shape, elements=values))
    mask = draw(hnp.arrays(np.bool_, shape))
    x[mask & draw(hnp.arrays(np.bool_, shape))] = -np.inf
    if draw(st.booleans()):
        x.reshape(-1, shape[-1])[0] = -np.inf
    if x.ndim > 1 and draw(st.booleans()):
        x = np.swapaxes(x, -1, -2)
    return x


def _assert_close(actual, expected, dtype):
    np.testing.assert_allclose(actual, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_softmax_matches_reference(dtype, data):
    x = data.draw(logits(dtype))
    y = kernels.softmax(x)
    assert y.dtype == dtype and not np.isnan(y).any()
    _assert_close(y, softmax_twin(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_log_softmax_matches_reference(dtype, data):
    x = data.draw(logits(dtype))
    z = kernels.log_softmax(x)
    assert z.dtype == dtype and not np.isnan(z).any()
    _assert_close(z, log_softmax_twin(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_softmax_backward_matches_reference(dtype, data):
    x = data.draw(logits(dtype))
    y = softmax_twin(x)
    g = data.draw(hnp.arrays(dtype, x.shape, elements=st.floats(-10, 10, width=32)))
    _assert_close(kernels.softmax_backward(y, g), softmax_backward_twin(y, g), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_log_softmax_backward_matches_reference(dtype, data):
    x = data.draw(logits(dtype))
    z = log_softmax_twin(x)
    g = data.draw(hnp.arrays(dtype, x.shape, elements=st.floats(-10, 10, width=32)))
    _assert_close(kernels.log_softmax_backward(z, g), log_softmax_backward_twin(z, g), dtype)


def test_fully_masked_row_conventions():
    x = np.full((2, 5), -np.inf, np.float32)
    x[1, 2] = 3.0
    np.testing.assert_array_equal(kernels.softmax(x), [[0] * 5, [0, 0, 1, 0, 0]])
    z = kernels.log_softmax(x)
    assert np.all(z[0] == -np.inf) and z[1, 2] == 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape", [(64, 1), (300, 4), (300, 7), (33, 16), (300, 20), (5, 31), (70, 33), (3, 1000)]
)
def test_softmax_kernels_across_row_lengths_and_chunks(dtype, shape):
    """Rows run in chunks of about 2048 values, each row in vectors of 4 or 8 lanes with a
    masked partial last vector unless the length is a multiple of the lanes: rows of 1,
    shorter than one vector, exact multiples and ragged, several chunks, -inf entries and
    fully masked rows."""
    from minigrad.kernels.cpu import softmax as cpu_softmax

    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 30).astype(dtype)
    x[rng.random(shape) < 0.2] = -np.inf
    x[::7] = -np.inf
    g = rng.standard_normal(shape).astype(dtype)
    y, z = softmax_twin(x), log_softmax_twin(x)
    cases = [
        ("softmax", (x,), y),
        ("log_softmax", (x,), z),
        ("softmax_backward", (y, g), softmax_backward_twin(y, g)),
        ("log_softmax_backward", (z, g), log_softmax_backward_twin(z, g)),
    ]
    for name, args, expected in cases:
        out = np.empty_like(x)
        getattr(cpu_softmax, name)(*args, out)
        _assert_close(out, expected, dtype)


@st.composite
def layer_norm_inputs(draw, dtype):
    """x of 1-3 dims (rows of length 1 included, sometimes a non-contiguous view), the
    number of normalised trailing dims, and weight/bias of that shape or None."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9))
    values = st.floats(-10, 10, width=32)
    x = draw(hnp.arrays(dtype, shape, elements=values))
    if x.ndim > 1 and draw(st.booleans()):
        x = np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    num_dims = draw(st.integers(1, x.ndim))
    normalized = x.shape[x.ndim - num_dims :]
    affine = draw(st.sampled_from(["none", "weight", "both"]))
    weight = bias = None
    if affine != "none":
        weight = draw(hnp.arrays(dtype, normalized, elements=st.floats(-2, 2, width=32)))
    if affine == "both":
        bias = draw(hnp.arrays(dtype, normalized, elements=values))
    return x, weight, bias, num_dims


def _assert_close_scaled(actual, expected, dtype, scale):
    """Like _assert_close, with the absolute tolerance multiplied by `scale`: layer norm
    multiplies the rounding error of the centred input by rstd (up to 1 / sqrt(eps))."""
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(actual, expected, rtol=tolerance, atol=tolerance * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data(), eps=st.sampled_from([1e-5, 0.1]))
def test_layer_norm_matches_reference(dtype, data, eps):
    x, weight, bias, num_dims = data.draw(layer_norm_inputs(dtype))
    expected = layer_norm_twin(x, weight, bias, num_dims, eps)
    actual = kernels.layer_norm(x, weight, bias, num_dims, eps)
    amplification = float(expected[2].max())
    for a, e in zip(actual, expected):
        assert a.dtype == dtype and a.shape == e.shape
        _assert_close_scaled(a, e, dtype, amplification)


def _layer_norm_backward_inputs(dtype, data) -> tuple:
    """x, weight, num_dims, the forward's mean and rstd, and an upstream gradient g."""
    x, weight, _, num_dims = data.draw(layer_norm_inputs(dtype))
    _, mean, rstd = layer_norm_twin(x, weight, None, num_dims, 1e-5)
    g = data.draw(hnp.arrays(dtype, x.shape, elements=st.floats(-2, 2, width=32)))
    return x, weight, num_dims, mean, rstd, g


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_layer_norm_backward_matches_reference(dtype, data):
    x, weight, num_dims, mean, rstd, g = _layer_norm_backward_inputs(dtype, data)
    expected = layer_norm_backward_twin(g, x, mean, rstd, weight, num_dims)
    actual = kernels.layer_norm_backward(g, x, mean, rstd, weight, num_dims)
    # dx carries rstd twice (once through xhat); the sums add one error per row
    amplification = float(rstd.max()) ** 2 * x.size
    for a, e in zip(actual, expected):
        if e is None:
            assert a is None
            continue
        assert a.dtype == dtype and a.shape == e.shape
        _assert_close_scaled(a, e, dtype, amplification)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_layer_norm_weight_grad_matches_reference(dtype, data):
    from minigrad.kernels.layer_norm import layer_norm_weight_grad_twin

    x, _, num_dims, mean, rstd, g = _layer_norm_backward_inputs(dtype, data)
    expected = layer_norm_weight_grad_twin(g, x, mean, rstd, num_dims)
    actual = kernels.layer_norm_weight_grad(g, x, mean, rstd, num_dims)
    assert actual.dtype == dtype and actual.shape == expected.shape
    _assert_close_scaled(actual, expected, dtype, float(rstd.max()) * x.size)


@st.composite
def cross_entropy_inputs(draw, dtype):
    """Logits (M, C) with 1-row and 1-class cases, some -inf entries and sometimes a
    non-contiguous view; targets with ignored rows (sometimes all); class weights or None;
    label smoothing 0, 0.1 or any in [1e-3, 1]."""
    rows, classes = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    x = draw(hnp.arrays(dtype, (rows, classes), elements=st.floats(-50, 50, width=32)))
    x[draw(hnp.arrays(np.bool_, x.shape)) & draw(hnp.arrays(np.bool_, x.shape))] = -np.inf
    if draw(st.booleans()):
        x = np.ascontiguousarray(x.T).T
    target = draw(hnp.arrays(np.int64, rows, elements=st.integers(0, classes - 1)))
    valid = draw(hnp.arrays(np.bool_, rows)) | draw(st.booleans())
    if draw(st.booleans()):
        valid[:] = False
    class_weight = None
    if draw(st.booleans()):
        class_weight = draw(hnp.arrays(dtype, classes, elements=st.floats(0, 3, width=32)))
    target_weight = valid.astype(dtype)
    if class_weight is not None:
        target_weight *= class_weight[target]
    # not below 1e-3: eps / C must not underflow in float32 (the kernel then skips the
    # smoothing term that the twin still multiplies, giving 0 * inf = NaN on -inf logits)
    smoothing = draw(st.one_of(st.just(0.0), st.just(0.1), st.floats(1e-3, 1)))
    return x, valid, target, target_weight, class_weight, smoothing


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_cross_entropy_matches_reference(dtype, data):
    arguments = data.draw(cross_entropy_inputs(dtype))
    expected_losses, expected_logp = cross_entropy_twin(*arguments)
    losses, logp = kernels.cross_entropy(*arguments)
    assert losses.dtype == logp.dtype == dtype
    # losses sum up to C products of logp (|logp| up to 1e2), one rounding each
    _assert_close_scaled(losses, expected_losses, dtype, 1e2 * logp.shape[1])
    _assert_close(logp, expected_logp, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data(), per_row=st.booleans())
def test_cross_entropy_backward_matches_reference(dtype, data, per_row):
    x, *rows = data.draw(cross_entropy_inputs(dtype))
    logp = log_softmax_twin(x)
    scale_shape = (x.shape[0], 1) if per_row else ()
    scale = data.draw(hnp.arrays(dtype, scale_shape, elements=st.floats(-2, 2, width=32)))
    dx = kernels.cross_entropy_backward(logp, *rows, scale)
    assert dx.dtype == dtype
    _assert_close(dx, cross_entropy_backward_twin(logp, *rows, scale), dtype)


def test_cross_entropy_all_ignored_gives_zero_loss_and_gradient():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    valid = np.zeros(3, bool)
    rows = (valid, np.zeros(3, np.int64), valid.astype(np.float32), None, 0.1)
    losses, logp = kernels.cross_entropy(x, *rows)
    np.testing.assert_array_equal(losses, 0)
    np.testing.assert_array_equal(kernels.cross_entropy_backward(logp, *rows, np.float32(1)), 0)


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
from minigrad.backend.special import erf
messages = [str(w.message) for w in caught if "without a cache" in str(w.message)]
print(len(messages), float(y.sum()), round(float(erf(np.array([0.5]))[0]), 6))
"""
    result = _python(code, MINIGRAD_KERNELS="numba")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "4.0", "0.5205"]  # erf(0.5), its Numba ufunc too


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data(), amsgrad=st.booleans(), decoupled=st.booleans(),
       weight_decay=st.sampled_from([0.0, 0.1]), step=st.integers(1, 50))
def test_adam_update_matches_reference(dtype, data, amsgrad, decoupled, weight_decay, step):
    from minigrad.kernels.adam import adam_update_twin

    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9))
    values = st.floats(-3, 3, width=32)
    p, g, m = (data.draw(hnp.arrays(dtype, shape, elements=values)) for _ in range(3))
    v, v_max = (np.abs(data.draw(hnp.arrays(dtype, shape, elements=values))) for _ in range(2))
    ours = [a.copy() for a in (p, m, v, v_max)]
    twin = [a.copy() for a in (p, m, v, v_max)]
    settings_ = (step, 1e-2, 0.9, 0.98, 1e-8, weight_decay, decoupled)
    kernels.adam_update(ours[0], g, ours[1], ours[2], ours[3] if amsgrad else None, *settings_)
    adam_update_twin(twin[0], g, twin[1], twin[2], twin[3] if amsgrad else None, *settings_)
    for a, b in zip(ours, twin):
        _assert_close(a, b, dtype)
