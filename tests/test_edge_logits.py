"""softmax, log_softmax, logsumexp and cross_entropy as users call them, in float32 and
float16, on logits at the edges of the dtype: up to 1e4 in magnitude, all near +-100 (exp
overflows float32 past 88 and float16 past 11 unless each row's max is subtracted), and
ordinary ones; in every kernel mode. Forward values and gradients (random upstream) must
lie within the tolerances derived from the ops' rounding (tests/tolerances.py) of a
float64 reference; both dtypes compute in float32 (float16 rounds the result)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import make_tensor, shapes, test_device
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tolerances import (
    SAFETY,
    assert_within,
    cross_entropy_backward_tolerance,
    log_softmax_backward_tolerance,
    log_softmax_tolerance,
    logsumexp_tolerance,
    output_rounding,
    softmax_backward_tolerance,
    softmax_tolerance,
    unit_roundoff,
    weighted_sum_tolerance,
)

import minigrad as mg
import minigrad.kernels as kernels
import minigrad.nn.functional as F

pytestmark = pytest.mark.device
DTYPES = [np.float32, np.float16]
MODES = ["numpy", "numba", "auto"]
EXAMPLES = settings(max_examples=8, deadline=None)


def _edge_values(dtype, shape, centre, spread):
    low, high = max(centre - spread, -1e4), min(centre + spread, 1e4)
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high),
                      fill=st.nothing()).map(lambda a: a.astype(dtype))


@st.composite
def edge_logits(draw, dtype, shape):
    """Values centred at 0, +-100 or 1e4 with a spread of 3, 30 or 1e4, within +-1e4."""
    centre = draw(st.sampled_from([0.0, 100.0, -100.0, 1e4]))
    spread = draw(st.sampled_from([3.0, 30.0, 1e4]))
    return draw(_edge_values(dtype, shape, centre, spread))


def _check(actual: mg.Tensor, expected, tolerance, dtype, what):
    assert actual.dtype.np == dtype, f"{what}: dtype {actual.dtype}"
    assert_within(actual.numpy(), expected, tolerance + output_rounding(expected, dtype), what)


def _skip_numba_without_cuda(mode):
    """GPU tensors in "numba" mode take the numba.cuda kernels: they need a GPU, or Numba's
    CUDA simulator (NUMBA_ENABLE_CUDASIM=1) under the CuPy stand-in."""
    if mode == "numba" and test_device() == "gpu":
        from numba import cuda
        if not cuda.is_available():
            pytest.skip("numba.cuda finds no GPU (run under NUMBA_ENABLE_CUDASIM=1)")


def _last_dim_rows(x, dim):
    return np.moveaxis(np.asarray(x, np.float64), dim, -1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@EXAMPLES
@given(data=st.data())
def test_softmax_and_log_softmax(mode, dtype, data):
    _skip_numba_without_cuda(mode)
    with kernels.mode(mode):
        _check_softmax_and_log_softmax(dtype, data)


def _check_softmax_and_log_softmax(dtype, data):
    array = data.draw(edge_logits(dtype, data.draw(shapes(min_dims=1, max_side=9))))
    dim = data.draw(st.integers(-array.ndim, array.ndim - 1))
    g = data.draw(_edge_values(dtype, array.shape, 0.0, 10.0))
    x = make_tensor(array, requires_grad=True)
    rows = _last_dim_rows(array, dim)
    shifted = rows - rows.max(-1, keepdims=True)
    log_y = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))

    y = x.softmax(dim)
    _check(y, np.moveaxis(np.exp(log_y), -1, dim),
           np.moveaxis(softmax_tolerance(rows, np.float32), -1, dim), dtype, "softmax")
    (dx,) = mg.autograd.grad(y, [x], make_tensor(g))
    y_rows, g_rows = _last_dim_rows(y.numpy(), dim), _last_dim_rows(g, dim)
    expected = y_rows * (g_rows - (g_rows * y_rows).sum(-1, keepdims=True))
    tolerance = softmax_backward_tolerance(y_rows, g_rows, np.float32)
    _check(dx, np.moveaxis(expected, -1, dim), np.moveaxis(tolerance, -1, dim), dtype,
           "softmax gradient")

    z = x.log_softmax(dim)
    _check(z, np.moveaxis(log_y, -1, dim),
           np.moveaxis(log_softmax_tolerance(rows, np.float32), -1, dim), dtype, "log_softmax")
    (dx,) = mg.autograd.grad(z, [x], make_tensor(g))
    z_rows = _last_dim_rows(z.numpy(), dim)
    expected = g_rows - np.exp(z_rows) * g_rows.sum(-1, keepdims=True)
    tolerance = log_softmax_backward_tolerance(z_rows, g_rows, np.float32)
    _check(dx, np.moveaxis(expected, -1, dim), np.moveaxis(tolerance, -1, dim), dtype,
           "log_softmax gradient")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@EXAMPLES
@given(data=st.data())
def test_logsumexp(mode, dtype, data):
    with kernels.mode(mode):
        _check_logsumexp(dtype, data)


def _check_logsumexp(dtype, data):
    """out = m + log(sum(exp(x - m))); dx = g softmax(x), within g times softmax's
    tolerance (the same exps and sum)."""
    array = data.draw(edge_logits(dtype, data.draw(shapes(min_dims=1, max_side=9))))
    dim = data.draw(st.integers(-array.ndim, array.ndim - 1))
    x = make_tensor(array, requires_grad=True)
    rows = _last_dim_rows(array, dim)
    m = rows.max(-1, keepdims=True)
    out = x.logsumexp(dim)
    expected = (m + np.log(np.exp(rows - m).sum(-1, keepdims=True)))[..., 0]
    _check(out, expected, logsumexp_tolerance(rows, np.float32), dtype, "logsumexp")
    g = data.draw(_edge_values(dtype, out.shape, 0.0, 10.0))
    (dx,) = mg.autograd.grad(out, [x], make_tensor(g))
    y = np.exp(rows - expected[..., None])
    tolerance = np.abs(g.astype(np.float64))[..., None] * softmax_tolerance(rows, np.float32)
    _check(dx, np.moveaxis(g[..., None] * y, -1, dim), np.moveaxis(tolerance, -1, dim), dtype,
           "logsumexp gradient")


def _check_cross_entropy(array, target, smoothing, dtype, upstream=None):
    """F.cross_entropy and its gradient against float64, for logits (N, C): per row
    (reduction "none", upstream g) or the mean (upstream 1, g_i = 1 / N):
        loss_i = -sum_c q_ic logp_ic,   dx = (softmax(x) sum_c q - q) g_i
    the losses within the rows' tolerances (and the mean's rounding); the gradient within
    the backward's tolerance and the error of the forward's logp it is computed from (dp =
    p dlogp)."""
    rows, classes = array.shape
    x = make_tensor(array, requires_grad=True)
    reduction = "mean" if upstream is None else "none"
    loss = F.cross_entropy(x, make_tensor(target), label_smoothing=smoothing,
                           reduction=reduction)
    logits = array.astype(np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    q = np.full(logits.shape, smoothing / classes)
    q[np.arange(rows), target] += 1 - smoothing
    logp_tolerance = log_softmax_tolerance(logits, np.float32)
    losses = -(q * logp).sum(-1)
    row_tolerance = weighted_sum_tolerance(q, logp, logp_tolerance, np.float32) \
        + output_rounding(losses, dtype)
    if upstream is None:
        mean_rounding = SAFETY * unit_roundoff(dtype) * (rows + 2) * np.abs(losses).mean()
        _check(loss, losses.mean(), row_tolerance.mean() + mean_rounding, dtype,
               "cross_entropy")
        (dx,) = mg.autograd.grad(loss, [x])
        scale = np.full((rows, 1), 1 / rows)
    else:
        _check(loss, losses, row_tolerance, dtype, "cross_entropy")
        (dx,) = mg.autograd.grad(loss, [x], make_tensor(upstream))
        scale = upstream.astype(np.float64)[:, None]
    p = np.exp(logp)
    if dtype == np.float16:  # the forward saves logp in float16
        logp_tolerance = logp_tolerance + output_rounding(logp, dtype)
    tolerance = cross_entropy_backward_tolerance(logp, q, scale, np.float32) \
        + np.abs(scale) * p * q.sum(-1, keepdims=True) * logp_tolerance
    _check(dx, (p * q.sum(-1, keepdims=True) - q) * scale, tolerance, dtype,
           "cross_entropy gradient")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@EXAMPLES
@given(data=st.data(), rows=st.integers(1, 9), classes=st.integers(2, 9),
       smoothing=st.sampled_from([0.0, 0.1]))
def test_cross_entropy(mode, dtype, data, rows, classes, smoothing):
    """Per row: with logits of +-1e4, float16 row losses reach 2e4, and their float16 sum
    for the mean overflows 65504 (inf, as in PyTorch)."""
    array = data.draw(edge_logits(dtype, (rows, classes)))
    target = data.draw(hnp.arrays(np.int64, rows, elements=st.integers(0, classes - 1)))
    upstream = data.draw(_edge_values(dtype, (rows,), 0.0, 2.0))
    with kernels.mode(mode):
        _check_cross_entropy(array, target, smoothing, dtype, upstream)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_of_a_batch_of_logits_near_100(mode, dtype):
    """24 rows of 1024 logits in 100 +- 3: 24,576 values, enough for the Numba kernels in
    "auto" mode too."""
    rng = np.random.default_rng(0)
    array = (100 + rng.uniform(-3, 3, (24, 1024))).astype(dtype)
    with kernels.mode(mode):
        _check_cross_entropy(array, rng.integers(0, 1024, 24), 0.1, dtype)
