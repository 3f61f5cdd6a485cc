"""Forward values of the losses (cross_entropy with class weights, ignore_index and label
smoothing; nll_loss; mse/l1/smooth_l1/huber with weights; binary cross entropy with and
without logits, weights and pos_weight; kl_div) in every reduction, against NumPy
formulas written from PyTorch's documented definitions. No PyTorch needed (see
numpy_oracle)."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from helpers import OP_SETTINGS, floats, layouts
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_oracle import (
    assert_forward,
    generic_arrays,
    ids,
    log_softmax,
    reduced,
    reductions,
    tensor,
)

import minigrad.nn.functional as F

pytestmark = pytest.mark.device

IGNORE = -1


@st.composite
def classification(draw):
    """(scores (N, C) or (N, C, d), targets with some ids ignored, class weights or None).
    At least one row is not ignored."""
    n, classes = draw(st.integers(2, 4)), draw(st.integers(2, 4))
    extra = tuple(draw(st.lists(st.integers(2, 3), max_size=1)))
    scores = draw(generic_arrays((n, classes) + extra, -4.0, 4.0))
    targets = draw(hnp.arrays(np.int64, (n,) + extra, elements=st.integers(IGNORE, classes - 1))
                   .filter(lambda t: bool(np.any(t != IGNORE))))
    weight = draw(st.none() | hnp.arrays(np.float64, (classes,), elements=floats(0.25, 2.0)))
    return scores, targets, weight


def rows_of(scores, targets):
    """Scores as (rows, C) with the class dim last, and the targets as (rows,)."""
    moved = np.moveaxis(scores, 1, -1)
    return moved.reshape(-1, scores.shape[1]), targets.reshape(-1)


@OP_SETTINGS
@given(case=classification(), reduction=reductions(), smoothing=st.sampled_from([0.0, 0.3]),
       layout=layouts())
def test_cross_entropy(case, reduction, smoothing, layout):
    """loss_i = (1 - eps) (-w[y_i] logp[i, y_i]) + eps/C sum_c (-w[c] logp[i, c]);
    0 where y_i is ignored; the mean divides by the sum of w[y_i] over rows kept."""
    scores, targets, weight = case
    rows, row_targets = rows_of(scores, targets)
    classes = rows.shape[1]
    w = np.ones(classes) if weight is None else weight
    logp = log_softmax(rows, 1)
    losses, kept_weight = np.zeros(len(rows)), 0.0
    for i, y in enumerate(row_targets):
        if y == IGNORE:
            continue
        picked = -w[y] * logp[i, y]
        spread = -(w * logp[i]).sum() / classes
        losses[i] = (1 - smoothing) * picked + smoothing * spread
        kept_weight += w[y]
    expected = reduced(losses.reshape(targets.shape), reduction, kept_weight)
    got = F.cross_entropy(tensor(scores, layout), ids(targets),
                          weight=None if weight is None else tensor(weight),
                          ignore_index=IGNORE, reduction=reduction, label_smoothing=smoothing)
    assert_forward(got, expected)


@OP_SETTINGS
@given(case=classification(), reduction=reductions(), layout=layouts())
def test_nll_loss(case, reduction, layout):
    """loss_i = -w[y_i] input[i, y_i]; the mean divides by the sum of w[y_i] kept."""
    scores, targets, weight = case
    rows, row_targets = rows_of(scores, targets)
    w = np.ones(rows.shape[1]) if weight is None else weight
    kept = row_targets != IGNORE
    safe = np.where(kept, row_targets, 0)
    losses = np.array([-w[y] * rows[i, y] if k else 0.0
                       for i, (y, k) in enumerate(zip(safe, kept))])
    expected = reduced(losses.reshape(targets.shape), reduction, w[safe][kept].sum())
    got = F.nll_loss(tensor(scores, layout), ids(targets),
                     weight=None if weight is None else tensor(weight), ignore_index=IGNORE,
                     reduction=reduction)
    assert_forward(got, expected)


def pair_of(shape):
    return st.tuples(generic_arrays(shape), generic_arrays(shape))


def shapes_2d():
    return st.tuples(st.integers(2, 4), st.integers(2, 4))


REGRESSION = {
    # name: (keyword arguments, per-element loss of d = input - target)
    "mse_loss": ({}, lambda d: d * d),
    "l1_loss": ({}, lambda d: np.abs(d)),
    "smooth_l1_loss": ({"beta": 0.7}, lambda d: np.where(
        np.abs(d) < 0.7, 0.5 * d * d / 0.7, np.abs(d) - 0.35)),
    "smooth_l1_beta_0": ({"beta": 0.0}, lambda d: np.abs(d)),
    "huber_loss": ({"delta": 0.7}, lambda d: np.where(
        np.abs(d) < 0.7, 0.5 * d * d, 0.7 * (np.abs(d) - 0.35))),
}


@pytest.mark.parametrize("case", list(REGRESSION))
@OP_SETTINGS
@given(data=st.data(), shape=shapes_2d(), reduction=reductions(), layout=layouts())
def test_regression_losses(case, data, shape, reduction, layout):
    kwargs, per_element = REGRESSION[case]
    name = "smooth_l1_loss" if case.startswith("smooth_l1") else case
    x, y = data.draw(pair_of(shape))
    assert_forward(getattr(F, name)(tensor(x, layout), tensor(y), reduction=reduction,
                                    **kwargs), reduced(per_element(x - y), reduction))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes_2d(), reduction=reductions())
def test_weighted_regression_losses(name, data, shape, reduction):
    """Weighted per element; the weighted mean divides by sum(w) for mse and l1, and by the
    element count for huber (PyTorch's definitions)."""
    x, y = data.draw(pair_of(shape))
    w = data.draw(hnp.arrays(np.float64, shape, elements=floats(0.25, 2.0)))
    kwargs, per_element = REGRESSION[name]
    divisor = None if name == "huber_loss" else w.sum()
    expected = reduced(w * per_element(x - y), reduction, divisor)
    assert_forward(getattr(F, name)(tensor(x), tensor(y), reduction=reduction, weight=tensor(w),
                                    **kwargs), expected)


@OP_SETTINGS
@given(data=st.data(), shape=shapes_2d(), reduction=reductions(), weighted=st.booleans(),
       layout=layouts())
def test_binary_cross_entropy(data, shape, reduction, weighted, layout):
    """-w (y log p + (1 - y) log(1 - p)) for probabilities p and soft targets y."""
    p = data.draw(generic_arrays(shape, 0.02, 0.98))
    y = data.draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 0.3, 1.0])))
    w = data.draw(hnp.arrays(np.float64, shape[1:], elements=floats(0.25, 2.0))) \
        if weighted else np.ones(shape[1:])
    expected = reduced(-w * (y * np.log(p) + (1 - y) * np.log(1 - p)), reduction)
    got = F.binary_cross_entropy(tensor(p, layout), tensor(y), reduction=reduction,
                                 weight=tensor(w) if weighted else None)
    assert_forward(got, expected)


@OP_SETTINGS
@given(data=st.data(), shape=shapes_2d(), reduction=reductions(), weighted=st.booleans(),
       layout=layouts())
def test_binary_cross_entropy_with_logits(data, shape, reduction, weighted, layout):
    """-w (pw y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))), pos_weight pw per class
    (the last dim), for logits as large as 30 (where 1 - sigmoid(x) underflows a naive
    formula: log(1 - sigmoid(x)) = -x - log(1 + e^-x) is used here)."""
    x = data.draw(generic_arrays(shape, -30.0, 30.0))
    y = data.draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 0.3, 1.0])))
    pw = data.draw(hnp.arrays(np.float64, shape[-1:], elements=floats(0.25, 3.0)))
    w = data.draw(hnp.arrays(np.float64, shape, elements=floats(0.25, 2.0))) \
        if weighted else np.ones(shape)
    log_p = -np.log1p(np.exp(-x))
    log_not_p = -x - np.log1p(np.exp(-x))
    expected = reduced(-w * (pw * y * log_p + (1 - y) * log_not_p), reduction)
    got = F.binary_cross_entropy_with_logits(
        tensor(x, layout), tensor(y), weight=tensor(w) if weighted else None,
        reduction=reduction, pos_weight=tensor(pw))
    assert_forward(got, expected)


@OP_SETTINGS
@given(data=st.data(), shape=shapes_2d(), log_target=st.booleans(), layout=layouts(),
       reduction=st.sampled_from(["none", "mean", "sum", "batchmean"]))
def test_kl_div(data, shape, log_target, layout, reduction):
    """target (log target - input) per element, 0 where the target is 0 (a log target is
    never -inf here: PyTorch gives NaN there); batchmean divides the sum by the batch size
    (dim 0)."""
    logq = log_softmax(data.draw(generic_arrays(shape)), 1)
    levels = [0.1, 0.4, 0.5] if log_target else [0.0, 0.1, 0.4, 0.5]
    p = data.draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(levels)))
    log_p = np.log(np.where(p > 0, p, 1.0))
    pointwise = np.where(p > 0, p * (log_p - logq), 0.0)
    target = log_p if log_target else p
    expected = np.sum(pointwise) / shape[0] if reduction == "batchmean" else \
        reduced(pointwise, reduction)
    warns = pytest.warns(UserWarning, match="batchmean") if reduction == "mean" else \
        contextlib.nullcontext()
    with warns:  # mean is not the KL divergence: PyTorch and minigrad say so
        got = F.kl_div(tensor(logq, layout), tensor(target), reduction=reduction,
                       log_target=log_target)
    assert_forward(got, expected)
