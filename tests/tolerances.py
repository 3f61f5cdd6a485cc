"""Tolerances derived from each op's rounding errors, for comparing a low-precision result
with an exact (float64 or wider) reference.

Each helper bounds |computed - exact| elementwise by a first-order rounding analysis of
the op's formula: every rounded operation of a value v adds up to u |v| (u = eps / 2, the
unit roundoff of the dtype the op computes in), a sum of n terms adds up to n u sum|terms|,
an error d in an exponent becomes a relative error d in exp, and an intermediate below
the smallest normal number errs by up to that number. Inputs count as exact.
`SAFETY` covers the reference's own error and the rounding model's slack. Where an op
computes in one dtype and returns another (float16 computed in float32), add
output_rounding for the result's own rounding. tests/test_tolerances.py checks that every
helper rejects results that are wrong by a small relative amount or in sign.
"""
from __future__ import annotations

import numpy as np

SAFETY = 2.0


def unit_roundoff(dtype) -> float:
    return float(np.finfo(dtype).eps) / 2


def output_rounding(expected, dtype):
    """The rounding of a result stored in `dtype`: u |result|, or half the smallest spacing
    near zero."""
    magnitude = np.abs(np.nan_to_num(np.asarray(expected, np.float64), posinf=0, neginf=0))
    return SAFETY * (unit_roundoff(dtype) * magnitude + _subnormal(dtype) / 2)


def assert_within(actual, expected, tolerance, what: str = "result") -> None:
    """|actual - expected| <= tolerance everywhere; a non-finite expected value (a masked
    row's -inf, an infinite loss) must be matched exactly."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(actual[~finite], expected[~finite],
                                  err_msg=f"{what}: non-finite entries differ")
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf: masked below
        error = np.where(finite, np.abs(actual - expected), 0)
    excess = error - np.broadcast_to(tolerance, error.shape)
    if np.nan_to_num(excess, nan=np.inf).max(initial=-np.inf) > 0:
        worst = np.unravel_index(np.argmax(np.nan_to_num(excess, nan=np.inf)), error.shape)
        raise AssertionError(
            f"{what}: at {worst} got {actual[worst]!r}, expected {expected[worst]!r} "
            f"(error {error[worst]:.3g} > tolerance "
            f"{np.broadcast_to(tolerance, error.shape)[worst]:.3g})"
        )


def _rows(x):
    """The row max m (0 for an all -inf row), x - m (0 where x is -inf), and the row's
    softmax y, log-sum L and length n, in float64."""
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    shifted = np.where(np.isfinite(x), x - m, -np.inf)
    total = np.exp(shifted).sum(axis=-1, keepdims=True)
    y = np.exp(shifted) / np.where(total == 0, 1, total)
    log_total = np.log(np.where(total == 0, 1, total))
    return m, np.where(np.isfinite(x), np.abs(x - m), 0), y, log_total, x.shape[-1]


def _log_row_errors(n: int) -> float:
    """The relative error of a row's sum of exps, over u: n for the sum, log n for the
    exponents' errors weighted by the softmax (sum y_j |x_j - m| <= log n), 4 for exp,
    the max's subtraction and the division."""
    return n + np.log(n) + 4


def softmax_tolerance(x, dtype):
    """For y = softmax(x) over the last axis: u y_i (|x_i - m| + n + log n + 4)."""
    _, distance, y, _, n = _rows(x)
    relative = unit_roundoff(dtype) * (distance + _log_row_errors(n))
    return SAFETY * (y * relative + (n + 1) * _underflow(dtype))


def log_softmax_tolerance(x, dtype):
    """For z = x - m - L, L = log(sum exp(x - m)): u (|x_i - m| + |z_i| + L + n + log n +
    4)."""
    m, distance, _, log_total, n = _rows(x)
    with np.errstate(invalid="ignore"):
        z = np.abs(np.asarray(x, dtype=np.float64) - m - log_total)
    z = np.where(np.isfinite(z), z, 0)
    rounding = unit_roundoff(dtype) * (distance + z + log_total + _log_row_errors(n))
    return SAFETY * (rounding + (n + 1) * _underflow(dtype))


def logsumexp_tolerance(x, dtype):
    """For out = m + L over the last axis, L = log(sum exp(x - m)): u (|m| + |out| + L + n +
    log n + 4)."""
    m, _, _, log_total, n = _rows(x)
    terms = np.abs(m) + np.abs(m + log_total) + log_total + _log_row_errors(n)
    return SAFETY * (unit_roundoff(dtype) * terms[..., 0] + (n + 1) * _underflow(dtype))


def softmax_backward_tolerance(y, g, dtype):
    """For dx = y (g - s), s = sum(g y): u |y_i| (|g_i| + |s| + (n + 2) sum|g y|)."""
    y, g = np.asarray(y, np.float64), np.asarray(g, np.float64)
    n = y.shape[-1]
    s = np.abs((g * y).sum(axis=-1, keepdims=True))
    spread = (n + 2) * np.abs(g * y).sum(axis=-1, keepdims=True)
    return SAFETY * (unit_roundoff(dtype) * np.abs(y) * (np.abs(g) + s + spread)
                     + (n + 2) * _underflow(dtype))


def log_softmax_backward_tolerance(z, g, dtype):
    """For dx = g - exp(z) G, G = sum(g): u (|g_i| + |dx_i| + exp(z_i) (3 |G| + n sum|g|))."""
    z, g = np.asarray(z, np.float64), np.asarray(g, np.float64)
    n = z.shape[-1]
    total = g.sum(axis=-1, keepdims=True)
    p = np.exp(z)
    dx = g - p * total
    magnitude = np.abs(g).sum(axis=-1, keepdims=True)
    spread = 3 * np.abs(total) + n * magnitude
    return SAFETY * (unit_roundoff(dtype) * (np.abs(g) + np.abs(dx) + p * spread)
                     + (2 + magnitude) * _underflow(dtype))


def weighted_sum_tolerance(weights, values, value_tolerance, dtype, axis=-1):
    """For sum_c w_c v_c, with v known within value_tolerance: sum |w| tol_v +
    u (n + 3) sum |w v| (the products, the weights' own rounding and the sum)."""
    weights, values = np.asarray(weights, np.float64), np.asarray(values, np.float64)
    n = values.shape[axis]
    with np.errstate(invalid="ignore"):
        products = np.abs(weights * values)
    products = np.where(np.isfinite(products), products, 0)  # a non-finite sum is exact
    rounding = unit_roundoff(dtype) * (n + 3) * products.sum(axis=axis)
    return SAFETY * ((np.abs(weights) * value_tolerance).sum(axis=axis) + rounding
                     + n * _underflow(dtype))


def cross_entropy_backward_tolerance(logp, q, scale, dtype):
    """For dx = (exp(logp) Q - q) scale, Q = sum(q): u |scale| (p_c (3 |Q| + (n + 2)
    sum|q|) + 2 |q_c|) + u |dx_c|."""
    logp, q = np.asarray(logp, np.float64), np.asarray(q, np.float64)
    scale = np.abs(np.asarray(scale, np.float64))
    n = logp.shape[-1]
    p = np.exp(logp)
    total = q.sum(axis=-1, keepdims=True)
    spread = 3 * np.abs(total) + (n + 2) * np.abs(q).sum(axis=-1, keepdims=True)
    dx = np.abs((p * total - q) * scale)
    return SAFETY * (unit_roundoff(dtype) * (scale * (p * spread + 2 * np.abs(q)) + dx)
                     + (1 + scale * (1 + np.abs(total))) * _underflow(dtype))


def layer_norm_tolerance(x, weight, bias, num_dims: int, eps: float, dtype):
    """(y, mean, rstd) of layer norm over the last num_dims dims, each row of n values:
        d_mean = u (n + 1) <|x|>,   d_c = d_mean + u |c|   (c = x - mean)
        d_var = (2 <|c|> + d_mean) d_mean + u (n + 3) <c^2>   (d_mean^2: a constant row)
        rel_rstd = d_var / (2 (var + eps)) + 3u
        d_y = |w| rstd (d_c + |c| rel_rstd) + u (2 |c rstd w| + |y| + |b|)."""
    u = unit_roundoff(dtype)
    x = np.asarray(x, np.float64)
    dims = tuple(range(-num_dims, 0))
    n = int(np.prod(x.shape[x.ndim - num_dims:]))
    mean = x.mean(axis=dims, keepdims=True)
    c = x - mean
    var = (c * c).mean(axis=dims, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    w = np.ones(x.shape[x.ndim - num_dims:]) if weight is None else np.asarray(weight, np.float64)
    b = np.zeros_like(w) if bias is None else np.asarray(bias, np.float64)
    y = c * rstd * w + b
    d_mean = u * (n + 1) * np.abs(x).mean(axis=dims, keepdims=True)
    d_var = (2 * np.abs(c).mean(axis=dims, keepdims=True) + d_mean) * d_mean \
        + u * (n + 3) * var
    rel_rstd = d_var / (2 * (var + eps)) + 3 * u
    d_y = (np.abs(w) * rstd * (d_mean + u * np.abs(c) + np.abs(c) * rel_rstd)
           + u * (2 * np.abs(c * rstd * w) + np.abs(y) + np.abs(b)))
    floor = _underflow(dtype)
    return (SAFETY * (d_y + (2 + rstd * np.abs(w)) * floor), SAFETY * (d_mean + floor),
            SAFETY * rstd * (rel_rstd + floor))


def layer_norm_backward_tolerance(g, x, mean, rstd, weight, num_dims: int, dtype):
    """(dx, dweight, dbias) of layer norm's backward given the forward's mean and rstd:
    with d = g w, xhat = (x - mean) rstd, A = <d>, B = <d xhat>, dx = rstd (d - A - xhat B):
        d_dx = u rstd (4 |d| + (n + 4) <|d|> + |xhat| ((n + 4) <|d xhat|> + 5 |B|)) + u |dx|
        d_dweight = u (rows + 3) sum |g xhat|,   d_dbias = u rows sum |g|."""
    u = unit_roundoff(dtype)
    g, x = np.asarray(g, np.float64), np.asarray(x, np.float64)
    mean, rstd = np.asarray(mean, np.float64), np.asarray(rstd, np.float64)
    dims = tuple(range(-num_dims, 0))
    leading = tuple(range(x.ndim - num_dims))
    n = int(np.prod(x.shape[x.ndim - num_dims:]))
    rows = x.size // n
    xhat = (x - mean) * rstd
    d = g if weight is None else g * np.asarray(weight, np.float64)
    mean_abs_d = np.abs(d).mean(axis=dims, keepdims=True)
    b = (d * xhat).mean(axis=dims, keepdims=True)
    dx = rstd * (d - d.mean(axis=dims, keepdims=True) - xhat * b)
    spread = (n + 4) * np.abs(d * xhat).mean(axis=dims, keepdims=True) + 5 * np.abs(b)
    d_dx = u * rstd * (4 * np.abs(d) + (n + 4) * mean_abs_d + np.abs(xhat) * spread)
    d_dweight = u * (rows + 3) * np.abs(g * xhat).sum(axis=leading)
    d_dbias = u * rows * np.abs(g).sum(axis=leading)
    floor = _underflow(dtype)
    dx_floor = (1 + rstd * (n + 4) * (1 + np.abs(xhat))) * floor
    return (SAFETY * (d_dx + u * np.abs(dx) + dx_floor), SAFETY * (d_dweight + rows * floor),
            SAFETY * (d_dbias + rows * floor))


def _subnormal(dtype) -> float:
    """The spacing of the smallest numbers of dtype: an output's rounding near zero."""
    return float(np.finfo(dtype).smallest_subnormal)


def _underflow(dtype) -> float:
    """An intermediate below the smallest normal number keeps no relative precision (and
    fast_exp flushes such exps to 0): it errs by up to that number, absolutely. Each
    helper multiplies it by the factors applied afterwards."""
    return float(np.finfo(dtype).tiny)
