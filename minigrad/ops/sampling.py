"""Drawing category indices from probabilities: multinomial (no gradient)."""
from __future__ import annotations

from minigrad import dtypes
from minigrad.generator import Generator, source
from minigrad.tensor_base import TensorBase


def multinomial(probs: TensorBase, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> TensorBase:
    """num_samples int64 category indices per row of `probs` (1-D, or 2-D for one draw
    per row), each drawn with probability proportional to its weight (weights need not
    sum to 1). Without replacement a category is drawn at most once per row."""
    rows = _checked_weights(probs, num_samples, replacement)
    xp = probs.xp
    draw = source(generator)
    count, size = rows.shape
    if replacement:
        # inverse CDF: the first category whose running total exceeds a uniform draw.
        # One searchsorted serves every row: row r's totals, in [0, 1], are shifted by r.
        totals = xp.cumsum(rows, axis=1)
        totals = totals / totals[:, -1:]
        totals[:, -1] = 1.0
        offsets = xp.arange(count)[:, None]
        uniforms = draw.uniform((count, num_samples), 0.0, 1.0, dtypes.float64, probs.device)
        picks = xp.searchsorted((totals + offsets).reshape(-1),
                                (uniforms + offsets).reshape(-1), side="right")
        picks = picks.reshape(count, num_samples) - offsets * size
        # rounding may step past the last category of weight > 0: take that one
        last_positive = size - 1 - xp.argmax(rows[:, ::-1] > 0, axis=1)
        picks = xp.minimum(picks, last_positive[:, None])
    else:
        # exponential race: category i arrives at E_i / p_i with E_i ~ Exp(1); the order
        # of arrival is a draw without replacement (first i with probability p_i / sum p,
        # then from the rest in proportion, ...). Weight 0 never arrives (time inf).
        uniforms = draw.uniform((count, size), 0.0, 1.0, dtypes.float64, probs.device)
        positive = rows > 0
        arrival = xp.where(positive, -xp.log1p(-uniforms) / xp.where(positive, rows, 1.0),
                           xp.inf)
        picks = xp.argsort(arrival, axis=1, kind="stable")[:, :num_samples]
    picks = picks.astype(xp.int64, copy=False)
    return probs._wrap(picks if probs.ndim == 2 else picks.reshape(num_samples))


def _checked_weights(probs: TensorBase, num_samples: int, replacement: bool):
    """The weights as float64 rows, after PyTorch's checks."""
    if not probs.dtype.is_floating_point:
        raise RuntimeError(f"multinomial: expected floating point weights, got {probs.dtype}")
    if probs.ndim not in (1, 2) or probs.shape[-1] == 0:
        raise RuntimeError(f"multinomial: expected a non-empty 1-D or 2-D tensor of weights, "
                           f"got shape {tuple(probs.shape)}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise RuntimeError(f"multinomial: num_samples must be a positive integer, got "
                           f"{num_samples!r}")
    xp = probs.xp
    rows = probs.array.reshape(-1, probs.shape[-1]).astype(xp.float64)
    if bool((~xp.isfinite(rows) | (rows < 0)).any()):
        raise RuntimeError("multinomial: weights must be finite and >= 0 (found inf, nan or "
                           f"a negative value in shape {tuple(probs.shape)})")
    positive = (rows > 0).sum(axis=1)
    if bool((positive == 0).any()):
        raise RuntimeError("multinomial: every row needs a weight > 0 (a row sums to 0)")
    if not replacement and num_samples > int(positive.min()):
        raise RuntimeError(
            f"multinomial: cannot draw {num_samples} samples without replacement from a row "
            f"with only {int(positive.min())} categories of weight > 0 (weights of shape "
            f"{tuple(probs.shape)})"
        )
    return rows

