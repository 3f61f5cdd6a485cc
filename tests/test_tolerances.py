"""The tolerance helpers of tests/tolerances.py accept the exact answer rounded to the
dtype, and reject an answer with one element off by a small relative amount (1e-4 in
float32, 1e-2 in float16, 1e-9 in float64) or of the wrong sign: a tolerance derived from
the op is never wide enough to accept anything."""
from __future__ import annotations

import numpy as np
import pytest
from tolerances import (
    assert_within,
    cross_entropy_backward_tolerance,
    layer_norm_backward_tolerance,
    layer_norm_tolerance,
    log_softmax_backward_tolerance,
    log_softmax_tolerance,
    logsumexp_tolerance,
    output_rounding,
    softmax_backward_tolerance,
    softmax_tolerance,
    weighted_sum_tolerance,
)

OFF_BY = {np.float64: 1e-9, np.float32: 1e-4, np.float16: 1e-2}


def _logits(rng, scale=5.0):
    return rng.standard_normal((4, 7)) * scale


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _log_softmax(x):
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _softmax_case(rng, dtype):
    x = _logits(rng)
    return [(_softmax(x), softmax_tolerance(x, dtype))]


def _float16_softmax_case(rng, dtype):
    """float16 computed in float32 (the kernels' way)."""
    x = _logits(rng).astype(dtype).astype(np.float64)
    y = _softmax(x)
    return [(y, softmax_tolerance(x, np.float32) + output_rounding(y, dtype))]


def _log_softmax_case(rng, dtype):
    x = _logits(rng, 100.0)
    return [(_log_softmax(x), log_softmax_tolerance(x, dtype))]


def _logsumexp_case(rng, dtype):
    x = _logits(rng, 1e3)
    return [(x.max(-1) + np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1)),
             logsumexp_tolerance(x, dtype))]


def _softmax_backward_case(rng, dtype):
    y, g = _softmax(_logits(rng)), rng.standard_normal((4, 7))
    return [(y * (g - (g * y).sum(-1, keepdims=True)), softmax_backward_tolerance(y, g, dtype))]


def _log_softmax_backward_case(rng, dtype):
    z, g = _log_softmax(_logits(rng)), rng.standard_normal((4, 7))
    return [(g - np.exp(z) * g.sum(-1, keepdims=True),
             log_softmax_backward_tolerance(z, g, dtype))]


def _weighted_sum_case(rng, dtype):
    """A cross-entropy loss: -sum_c q_c logp_c, logp known within its own tolerance."""
    x = _logits(rng, 30.0)
    q = rng.uniform(0, 1, x.shape)
    logp = _log_softmax(x)
    return [(-(q * logp).sum(-1),
             weighted_sum_tolerance(q, logp, log_softmax_tolerance(x, dtype), dtype))]


def _cross_entropy_backward_case(rng, dtype):
    logp, q = _log_softmax(_logits(rng)), rng.uniform(0, 1, (4, 7))
    scale = rng.uniform(-2, 2, (4, 1))
    return [((np.exp(logp) * q.sum(-1, keepdims=True) - q) * scale,
             cross_entropy_backward_tolerance(logp, q, scale, dtype))]


def _layer_norm_case(rng, dtype):
    x = rng.standard_normal((3, 8)) * 4 + 2
    w, b = rng.standard_normal(8), rng.standard_normal(8)
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    y = (x - mean) * rstd * w + b
    return list(zip([y, mean, rstd], layer_norm_tolerance(x, w, b, 1, 1e-5, dtype)))


def _layer_norm_backward_case(rng, dtype):
    x, g, w = rng.standard_normal((3, 8)) * 4, rng.standard_normal((3, 8)), rng.standard_normal(8)
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    xhat, d = (x - mean) * rstd, g * w
    dx = rstd * (d - d.mean(-1, keepdims=True) - xhat * (d * xhat).mean(-1, keepdims=True))
    expected = [dx, (g * xhat).sum(0), g.sum(0)]
    return list(zip(expected, layer_norm_backward_tolerance(g, x, mean, rstd, w, 1, dtype)))


CASES = {
    "softmax": _softmax_case,
    "log_softmax": _log_softmax_case,
    "logsumexp": _logsumexp_case,
    "softmax_backward": _softmax_backward_case,
    "log_softmax_backward": _log_softmax_backward_case,
    "weighted_sum": _weighted_sum_case,
    "cross_entropy_backward": _cross_entropy_backward_case,
    "layer_norm": _layer_norm_case,
    "layer_norm_backward": _layer_norm_backward_case,
}


def _all_cases():
    for name, case in CASES.items():
        for dtype in (np.float64, np.float32):
            yield pytest.param(case, dtype, id=f"{name}-{dtype.__name__}")
    yield pytest.param(_float16_softmax_case, np.float16, id="softmax-float16")


@pytest.mark.parametrize("case, dtype", list(_all_cases()))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tolerance_accepts_rounded_and_rejects_wrong(case, dtype, seed):
    for expected, tolerance in case(np.random.default_rng(seed), dtype):
        rounded = expected.astype(dtype).astype(np.float64)
        assert_within(rounded, expected, tolerance)
        largest = np.unravel_index(np.argmax(np.abs(expected)), expected.shape)
        for wrong_value in (expected[largest] * (1 + OFF_BY[dtype]), -expected[largest]):
            wrong = expected.copy()
            wrong[largest] = wrong_value
            with pytest.raises(AssertionError, match="tolerance"):
                assert_within(wrong, expected, tolerance)


def test_assert_within_requires_non_finite_entries_to_match():
    expected = np.array([0.5, -np.inf])
    assert_within(np.array([0.5, -np.inf]), expected, 0.0)
    with pytest.raises(AssertionError, match="non-finite"):
        assert_within(np.array([0.5, -1e30]), expected, 1.0)
    with pytest.raises(AssertionError, match="tolerance"):
        assert_within(np.array([np.nan, -np.inf]), expected, 1.0)
