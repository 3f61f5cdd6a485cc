"""Losses: hypothesis gradient checks in float64 (full Jacobian and a random-upstream
backward against finite differences, every differentiable input, every reduction) and
second derivatives; error messages for bad input; the loss modules; and toy_translate's
label-smoothed loss written as a KL divergence plus the targets' constant entropy."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, arrays, away_from, check_grad, floats, make_tensor
from hypothesis import given
from hypothesis import strategies as st
from op_cases import leaf

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from minigrad.autograd import gradgradcheck

pytestmark = [pytest.mark.device,
              pytest.mark.filterwarnings("ignore:kl_div. reduction='mean'")]

REDUCTIONS = ["none", "mean", "sum"]
loss_shapes = st.sampled_from([(3,), (2, 3), (2, 3, 2), ()])
probabilities = floats(0.05, 0.95)  # away from 0 and 1, where BCE's log is clamped


def _distribution(data, shape, zeros: bool = False) -> np.ndarray:
    """Rows (last dim) that sum to 1; with zeros, some entries exactly 0."""
    weights = data.draw(arrays(shape, floats(0.1, 2.0)))
    if zeros and weights.size > 1:
        weights.reshape(-1)[::3] = 0.0
        weights.reshape(-1, shape[-1])[:, -1] += 0.5  # no all-zero row
    return weights / weights.sum(-1, keepdims=True)


def _check(loss, *inputs, second_order: bool = True):
    check_grad(loss, *inputs)
    if second_order:
        assert gradgradcheck(loss, inputs, atol=1e-4)


# ----------------------------------------------------------------------------- gradients


@FEW_EXAMPLES
@given(data=st.data(), reduction=st.sampled_from(REDUCTIONS + ["batchmean"]),
       log_target=st.booleans())
def test_kl_div_gradients(data, reduction, log_target):
    shape = (2, 4)
    log_q = np.log(_distribution(data, shape))
    p = _distribution(data, shape)
    target = np.log(p) if log_target else p
    _check(lambda x, y: F.kl_div(x, y, reduction=reduction, log_target=log_target),
           leaf(log_q), leaf(target))


@FEW_EXAMPLES
@given(data=st.data())
def test_kl_div_with_zero_targets_has_the_input_gradient_minus_target(data):
    p = _distribution(data, (3, 4), zeros=True)
    log_q = leaf(np.log(_distribution(data, (3, 4))))
    target = make_tensor(p)
    _check(lambda x: F.kl_div(x, target, reduction="batchmean"), log_q)
    log_q.grad = None
    F.kl_div(log_q, target, reduction="sum").backward()
    np.testing.assert_allclose(log_q.grad.numpy(), -p)


@FEW_EXAMPLES
@given(data=st.data(), shape=loss_shapes, reduction=st.sampled_from(REDUCTIONS),
       weighted=st.booleans())
def test_binary_cross_entropy_gradients(data, shape, reduction, weighted):
    x = leaf(data.draw(arrays(shape, probabilities)))
    y = leaf(data.draw(arrays(shape, probabilities)))  # finite differences stay in [0, 1]
    inputs = [x, y]
    if weighted:
        inputs.append(leaf(data.draw(arrays(shape[-1:], floats(0.5, 2.0)))))

    def loss(probs, target, *weight):
        return F.binary_cross_entropy(probs, target, *weight, reduction=reduction)

    _check(loss, *inputs)


@FEW_EXAMPLES
@given(data=st.data(), shape=loss_shapes, reduction=st.sampled_from(REDUCTIONS),
       weighted=st.booleans(), with_pos_weight=st.booleans())
def test_binary_cross_entropy_with_logits_gradients(data, shape, reduction, weighted,
                                                    with_pos_weight):
    x = leaf(data.draw(arrays(shape, floats(-4.0, 4.0))))
    y = leaf(data.draw(arrays(shape, floats(0.0, 1.0))))
    weight = leaf(data.draw(arrays(shape, floats(0.5, 2.0)))) if weighted else None
    pos_weight = leaf(data.draw(arrays(shape[-1:], floats(0.5, 3.0)))) \
        if with_pos_weight else None
    extras = [t for t in (weight, pos_weight) if t is not None]

    def loss(logits, target, *extra):
        given_ = iter(extra)
        return F.binary_cross_entropy_with_logits(
            logits, target, next(given_) if weighted else None, reduction=reduction,
            pos_weight=next(given_) if with_pos_weight else None)

    _check(loss, x, y, *extras)


@FEW_EXAMPLES
@given(data=st.data(), shape=loss_shapes, reduction=st.sampled_from(REDUCTIONS),
       weighted=st.booleans())
def test_l1_loss_gradients(data, shape, reduction, weighted):
    x = data.draw(arrays(shape))
    offset = data.draw(arrays(shape, away_from([0.0], 0.1)))  # |x - y| has a kink at 0
    inputs = [leaf(x), leaf(x + offset)]
    if weighted:
        inputs.append(leaf(data.draw(arrays(shape, floats(0.5, 2.0)))))
    _check(lambda a, b, *w: F.l1_loss(a, b, reduction=reduction,
                                      weight=w[0] if w else None), *inputs)


@FEW_EXAMPLES
@given(data=st.data(), shape=loss_shapes, reduction=st.sampled_from(REDUCTIONS),
       weighted=st.booleans())
def test_mse_loss_weighted_gradients(data, shape, reduction, weighted):
    inputs = [leaf(data.draw(arrays(shape))), leaf(data.draw(arrays(shape)))]
    if weighted:
        inputs.append(leaf(data.draw(arrays(shape, floats(0.5, 2.0)))))
    _check(lambda a, b, *w: F.mse_loss(a, b, reduction=reduction,
                                       weight=w[0] if w else None), *inputs)


@pytest.mark.parametrize("name", ["smooth_l1", "huber"])
@FEW_EXAMPLES
@given(data=st.data(), shape=loss_shapes, reduction=st.sampled_from(REDUCTIONS),
       edge=st.sampled_from([0.5, 1.0, 2.0]))
def test_smooth_l1_and_huber_gradients(name, data, shape, reduction, edge):
    x = data.draw(arrays(shape))
    # the second derivative jumps where |x - y| = edge: stay clear of it
    offset = data.draw(arrays(shape, away_from([-edge, edge], 0.05)))
    inputs = leaf(x), leaf(x + offset)
    if name == "smooth_l1":
        _check(lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=edge), *inputs)
    else:
        _check(lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=edge), *inputs)


def test_smooth_l1_with_beta_zero_is_l1():
    a, b = make_tensor([0.5, -2.0, 3.0]), make_tensor([0.0, 1.0, 3.5])
    assert F.smooth_l1_loss(a, b, beta=0.0).item() == F.l1_loss(a, b).item()
    np.testing.assert_allclose(
        F.huber_loss(a, b, delta=2.0, reduction="none").numpy(),
        2.0 * F.smooth_l1_loss(a, b, beta=2.0, reduction="none").numpy())


# ----------------------------------------------------------------------------- values


def test_binary_cross_entropy_clamps_its_logs_at_minus_100():
    x = make_tensor([0.0, 1.0, 0.0, 1.0], dtype=mg.float64).requires_grad_()
    y = make_tensor([1.0, 0.0, 0.0, 1.0], dtype=mg.float64)
    loss = F.binary_cross_entropy(x, y, reduction="none")
    np.testing.assert_array_equal(loss.numpy(), [100.0, 100.0, 0.0, 0.0])
    loss.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [-1e12, 1e12, 0.0, 0.0])


def test_binary_cross_entropy_with_logits_is_stable_for_large_logits():
    x = make_tensor([-1000.0, 1000.0, 0.0], dtype=mg.float32)
    y = make_tensor([1.0, 0.0, 0.5], dtype=mg.float32)
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="none")
    np.testing.assert_allclose(loss.numpy(), [1000.0, 1000.0, np.log(2)], rtol=1e-6)
    probabilities_ = F.binary_cross_entropy(x.sigmoid(), y, reduction="none")
    assert probabilities_.numpy()[0] == 100.0  # the clamped log: why logits are better


def test_kl_div_batchmean_is_the_divergence_per_sample():
    p = np.array([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7]])
    q = np.array([[0.25, 0.25, 0.5], [0.3, 0.3, 0.4]])
    expected = np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1) / q), 0)) / 2
    log_q = make_tensor(np.log(q))
    assert F.kl_div(log_q, make_tensor(p), reduction="batchmean").item() == \
        pytest.approx(expected, rel=1e-12)
    p[0] = [0.5, 0.4, 0.1]
    expected = np.sum(p * np.log(p / q)) / 2
    assert F.kl_div(log_q, make_tensor(np.log(p)), reduction="batchmean",
                    log_target=True).item() == pytest.approx(expected, rel=1e-12)


def test_kl_div_mean_warns_as_pytorch_does():
    x = make_tensor(np.log([[0.5, 0.5]]))
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(x, x.exp())


def test_legacy_size_average_and_reduce_map_to_a_reduction():
    a, b = make_tensor([1.0, 2.0]), make_tensor([0.0, 0.0])
    with pytest.warns(DeprecationWarning, match="reduction='sum'"):
        assert F.mse_loss(a, b, size_average=False).item() == 5.0
    with pytest.warns(DeprecationWarning, match="reduction='none'"):
        assert F.l1_loss(a, b, reduce=False).shape == (2,)


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.binary_cross_entropy(mg.tensor([0.5, 1.5]), mg.tensor([0.0, 1.0])),
     RuntimeError, "binary_cross_entropy: all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(mg.tensor([0.5, 0.5]), mg.tensor([0.0, -1.0])),
     RuntimeError, "all elements of target should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(mg.tensor([0.5, float("nan")]), mg.tensor([0.0, 1.0])),
     RuntimeError, "between 0 and 1"),
    (lambda: F.binary_cross_entropy(mg.tensor([0.5, 0.5]), mg.tensor([[0.0, 1.0]])),
     ValueError, r"binary_cross_entropy: target shape \(1, 2\) differs from input shape \(2,\)"),
    (lambda: F.binary_cross_entropy(mg.tensor([0.5, 0.5]), mg.tensor([0, 1])),
     TypeError, "target must be a floating-point tensor"),
    (lambda: F.binary_cross_entropy(mg.tensor([0.5, 0.5]), mg.tensor([0.0, 1.0]),
                                    weight=mg.ones(3)),
     ValueError, r"weight of shape \(3,\) does not broadcast to the input shape \(2,\)"),
    (lambda: F.binary_cross_entropy_with_logits(mg.zeros(2, 3), mg.zeros(3)),
     ValueError, "binary_cross_entropy_with_logits: target shape"),
    (lambda: F.binary_cross_entropy_with_logits(mg.zeros(2, 3), mg.zeros(2, 3),
                                                pos_weight=mg.ones(2)),
     ValueError, "pos_weight of shape"),
    (lambda: F.kl_div(mg.zeros(2, 3), mg.zeros(3, 2)), ValueError, "kl_div: target shape"),
    (lambda: F.kl_div(mg.zeros(2, 3), mg.zeros(2, 3), reduction="avg"), ValueError,
     r"kl_div: reduction must be one of \('none', 'mean', 'sum', 'batchmean'\), got 'avg'"),
    (lambda: F.mse_loss(mg.zeros(2), mg.zeros(2), reduction="batchmean"), ValueError,
     "mse_loss: reduction must be one of"),
    (lambda: F.mse_loss(mg.zeros(2), mg.zeros(2), "sum"), TypeError,
     "pass the reduction by keyword: reduction='sum'"),
    (lambda: F.l1_loss(mg.zeros(2, 1), mg.zeros(2)), ValueError, "l1_loss: target shape"),
    (lambda: F.l1_loss(mg.zeros(2), mg.zeros(2), weight=mg.ones(1)), ValueError,
     r"l1_loss: weight shape \(1,\) must equal the input shape \(2,\)"),
    (lambda: F.smooth_l1_loss(mg.zeros(2), mg.zeros(2), beta=-1.0), ValueError,
     "smooth_l1_loss: beta must be >= 0"),
    (lambda: F.huber_loss(mg.zeros(2), mg.zeros(2), delta=0.0), ValueError,
     "huber_loss: delta must be > 0"),
    (lambda: nn.KLDivLoss(reduction="batch"), ValueError, "KLDivLoss: reduction must be"),
    (lambda: nn.BCELoss()(mg.tensor([2.0]), mg.tensor([1.0])), RuntimeError, "between 0"),
    # a class id out of range, with and without ignored rows beside it
    (lambda: F.cross_entropy(mg.zeros(3, 4), mg.tensor([0, 4, 1])), IndexError,
     r"cross_entropy: target ids must be in \[0, 4\) or equal ignore_index=-100, got 4"),
    (lambda: F.cross_entropy(mg.zeros(3, 4), mg.tensor([-100, -1, 3])), IndexError,
     "got -1"),
    (lambda: F.nll_loss(mg.zeros(3, 4), mg.tensor([2, -100, 7])), IndexError,
     r"nll_loss: target ids must be in \[0, 4\) .* got 7"),
])
def test_bad_input_raises_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_cross_entropy_takes_an_ignore_index_outside_the_classes():
    loss = F.cross_entropy(mg.zeros(2, 4), mg.tensor([3, 5]), ignore_index=5)
    assert np.isclose(loss.item(), np.log(4))


# ----------------------------------------------------------------------------- modules


def test_loss_modules_match_their_functions():
    rng = np.random.default_rng(0)
    x, y = mg.tensor(rng.uniform(0.1, 0.9, (4, 3))), mg.tensor(rng.uniform(0, 1, (4, 3)))
    logits, ids = mg.tensor(rng.standard_normal((4, 3))), mg.tensor([0, 2, 1, -100])
    weight = mg.tensor([1.0, 2.0, 0.5], dtype=mg.float64)
    pairs = [
        (nn.L1Loss(reduction="sum")(x, y), F.l1_loss(x, y, reduction="sum")),
        (nn.MSELoss()(x, y), F.mse_loss(x, y)),
        (nn.SmoothL1Loss(beta=0.3)(x, y), F.smooth_l1_loss(x, y, beta=0.3)),
        (nn.HuberLoss(delta=0.3)(x, y), F.huber_loss(x, y, delta=0.3)),
        (nn.KLDivLoss(reduction="batchmean", log_target=True)(x.log(), y.log()),
         F.kl_div(x.log(), y.log(), reduction="batchmean", log_target=True)),
        (nn.BCELoss(weight)(x, y), F.binary_cross_entropy(x, y, weight)),
        (nn.BCEWithLogitsLoss(pos_weight=weight)(logits, y),
         F.binary_cross_entropy_with_logits(logits, y, pos_weight=weight)),
        (nn.CrossEntropyLoss(weight, label_smoothing=0.1)(logits, ids),
         F.cross_entropy(logits, ids, weight, label_smoothing=0.1)),
        (nn.NLLLoss(reduction="none")(logits.log_softmax(1), ids),
         F.nll_loss(logits.log_softmax(1), ids, reduction="none")),
    ]
    for module_loss, function_loss in pairs:
        np.testing.assert_array_equal(module_loss.numpy(), function_loss.numpy())


def test_loss_weights_are_buffers_saved_and_moved_with_the_module():
    loss = nn.BCEWithLogitsLoss(weight=mg.ones(3), pos_weight=mg.full((3,), 2.0))
    assert list(loss.state_dict()) == ["weight", "pos_weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    loss.double()
    assert loss.pos_weight.dtype is mg.float64
    assert repr(nn.KLDivLoss()) == "KLDivLoss()"
    with pytest.warns(DeprecationWarning):
        assert nn.MSELoss(size_average=False).reduction == "sum"


# ----------------------------------------------------------------------------- toy_translate


def test_toy_translate_label_smoothed_loss_is_kl_to_the_smoothed_targets_plus_entropy():
    """Training as comparing two distributions: for every target token that is not
    padding, train/'s loss (F.cross_entropy with ignore_index=PAD_ID and label smoothing
    eps over the V words of the English vocabulary) compares the model's p with the
    smoothed target q = (1 - eps) one_hot + eps / V, and
        cross_entropy(q, p) = KL(q || p) + H(q),
    where H(q) is a constant of the data: minimising the loss minimises the divergence."""
    import random

    from train.config import Config
    from train.data import make_vocabularies, sample_pair
    from train.loop import batch_loss, make_batch
    from train.vocab import PAD_ID

    class FixedLogits(nn.Module):
        """Random logits over the vocabulary for every target position, kept for the test."""

        def __init__(self, vocabulary: int) -> None:
            super().__init__()
            self.vocabulary = vocabulary

        def forward(self, src, tgt_in):
            rng = np.random.default_rng(0)
            self.logits = mg.tensor(rng.standard_normal((*tgt_in.shape, self.vocabulary)))
            return self.logits

    src_vocab, tgt_vocab = make_vocabularies()
    rng = random.Random(0)
    pairs = [sample_pair(rng) for _ in range(4)]
    src, tgt = make_batch([(src_vocab.encode(fr), tgt_vocab.encode(en)) for fr, en in pairs])
    assert (tgt == PAD_ID).any()  # sentences of different lengths: some targets are padding
    vocabulary, eps = len(tgt_vocab), Config().label_smoothing
    model = FixedLogits(vocabulary)
    loss = batch_loss(model, src, tgt, "cpu", eps).item()

    target = tgt[:, 1:].reshape(-1)
    kept = target != PAD_ID
    q = np.full((kept.sum(), vocabulary), eps / vocabulary)
    q[np.arange(kept.sum()), target[kept]] += 1 - eps
    log_p = F.log_softmax(model.logits.reshape(-1, vocabulary)[mg.tensor(kept)], dim=-1)
    divergence = F.kl_div(log_p, mg.tensor(q), reduction="batchmean").item()
    entropy = -(q * np.log(q)).sum(-1).mean()
    assert loss == pytest.approx(divergence + entropy, rel=1e-12)
    assert divergence > 0 and entropy > 0
