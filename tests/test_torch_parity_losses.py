"""Losses against PyTorch: the same float64 inputs (input, target and weights) give the
same loss and the same gradients for every input PyTorch differentiates, for every
reduction, plus second derivatives through create_graph. Skipped without torch."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, make_tensor
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

pytestmark = [pytest.mark.device,
              pytest.mark.filterwarnings("ignore:kl_div. reduction='mean'"),
              pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")]

REDUCTIONS = ["none", "mean", "sum"]


def _distribution(rng, shape, zeros=False):
    weights = rng.uniform(0.1, 2.0, shape)
    if zeros:
        weights[..., ::2] = 0.0
    return weights / weights.sum(-1, keepdims=True)


# name -> (inputs from a seeded generator, indices of inputs to differentiate, loss(lib_F, *t))
# lib_F is F or torch's functional; every loss takes its keyword arguments by name.
def _kl_inputs(log_target: bool):
    def make(rng):
        prediction, target = _distribution(rng, (3, 4)), _distribution(rng, (3, 4))
        return [np.log(prediction), np.log(target) if log_target else target]
    return make


CASES = {
    "kl_div_" + reduction + ("_log_target" if log_target else ""): (
        _kl_inputs(log_target), (0, 1),
        lambda L, x, y, r=reduction, lt=log_target: L.kl_div(x, y, reduction=r, log_target=lt))
    for reduction in REDUCTIONS + ["batchmean"] for log_target in (False, True)
}
CASES["kl_div_zero_targets"] = (
    lambda rng: [np.log(_distribution(rng, (2, 5))), _distribution(rng, (2, 5), zeros=True)],
    (0,), lambda L, x, y: L.kl_div(x, y, reduction="batchmean"))
for reduction in REDUCTIONS:
    CASES["bce_" + reduction] = (
        lambda rng: [rng.uniform(0.01, 0.99, (4, 3)), rng.uniform(0, 1, (4, 3))], (0, 1),
        lambda L, x, y, r=reduction: L.binary_cross_entropy(x, y, reduction=r))
    CASES["bce_weighted_" + reduction] = (
        lambda rng: [rng.uniform(0.01, 0.99, (4, 3)), rng.uniform(0, 1, (4, 3)),
                     rng.uniform(0.5, 2, 3)], (0, 1),
        lambda L, x, y, w, r=reduction: L.binary_cross_entropy(x, y, w, reduction=r))
    CASES["bce_logits_" + reduction] = (
        lambda rng: [rng.normal(0, 5, (4, 3)), rng.uniform(0, 1, (4, 3)),
                     rng.uniform(0.5, 2, (4, 3)), rng.uniform(0.5, 3, 3)], (0, 1),
        lambda L, x, y, w, pw, r=reduction: L.binary_cross_entropy_with_logits(
            x, y, w, reduction=r, pos_weight=pw))
    CASES["bce_logits_plain_" + reduction] = (
        lambda rng: [rng.normal(0, 30, (2, 3, 2)), rng.uniform(0, 1, (2, 3, 2))], (0, 1),
        lambda L, x, y, r=reduction: L.binary_cross_entropy_with_logits(x, y, reduction=r))
    for name in ("l1_loss", "mse_loss"):
        CASES[f"{name}_{reduction}"] = (
            lambda rng: [rng.normal(size=(3, 4)), rng.normal(size=(3, 4))], (0, 1),
            lambda L, x, y, r=reduction, n=name: getattr(L, n)(x, y, reduction=r))
        CASES[f"{name}_weighted_{reduction}"] = (
            lambda rng: [rng.normal(size=(3, 4)), rng.normal(size=(3, 4)),
                         rng.uniform(0.5, 2, (3, 4))], (0, 1, 2),
            lambda L, x, y, w, r=reduction, n=name: getattr(L, n)(x, y, reduction=r, weight=w))
    for beta in (0.0, 0.5, 1.0, 3.0):
        CASES[f"smooth_l1_beta{beta}_{reduction}"] = (
            lambda rng: [rng.normal(size=(3, 4)) * 2, rng.normal(size=(3, 4))], (0, 1),
            lambda L, x, y, r=reduction, b=beta: L.smooth_l1_loss(x, y, reduction=r, beta=b))
    for delta in (0.5, 2.0):
        CASES[f"huber_delta{delta}_{reduction}"] = (
            lambda rng: [rng.normal(size=(3, 4)) * 2, rng.normal(size=(3, 4)),
                         rng.uniform(0.5, 2, (3, 4))], (0, 1),
            lambda L, x, y, w, r=reduction, d=delta: L.huber_loss(x, y, reduction=r, delta=d,
                                                                  weight=w))


def _functional(lib):
    return F if lib == "minigrad" else TF


def _run(name: str, seed: int, lib: str):
    make_inputs, differentiable, loss = CASES[name]
    values = make_inputs(np.random.default_rng(seed))
    if lib == "minigrad":
        tensors = [make_tensor(v, requires_grad=i in differentiable)
                   for i, v in enumerate(values)]
    else:
        tensors = [torch.tensor(v, requires_grad=i in differentiable)
                   for i, v in enumerate(values)]
    out = loss(_functional(lib), *tensors)
    upstream = np.random.default_rng(seed + 1).standard_normal(tuple(out.shape))
    out.backward(mg.tensor(upstream, device=out.device) if lib == "minigrad"
                 else torch.tensor(upstream))
    grads = [tensors[i].grad for i in differentiable]
    as_numpy = (lambda t: t.numpy()) if lib == "minigrad" else (lambda t: t.detach().numpy())
    return as_numpy(out), [as_numpy(g) for g in grads]


@pytest.mark.parametrize("name", list(CASES))
@FEW_EXAMPLES
@given(seed=st.integers(0, 2**16))
def test_loss_and_gradients_match_torch(name, seed):
    ours, our_grads = _run(name, seed, "minigrad")
    theirs, their_grads = _run(name, seed, "torch")
    assert ours.shape == theirs.shape
    assert np.all(np.isfinite(ours)) and all(np.all(np.isfinite(g)) for g in our_grads)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    for index, (mine, reference) in enumerate(zip(our_grads, their_grads, strict=True)):
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-12,
                                   err_msg=f"gradient of input {CASES[name][1][index]}")


@pytest.mark.parametrize("name", ["kl_div_batchmean", "bce_weighted_mean", "bce_logits_sum",
                                  "smooth_l1_beta0.5_mean", "huber_delta2.0_sum"])
def test_second_derivatives_match_torch(name):
    make_inputs, differentiable, loss = CASES[name]
    values = make_inputs(np.random.default_rng(7))
    ours = [make_tensor(v, requires_grad=i in differentiable) for i, v in enumerate(values)]
    theirs = [torch.tensor(v, requires_grad=i in differentiable) for i, v in enumerate(values)]
    first = differentiable[0]
    (our_grad,) = mg.autograd.grad(loss(F, *ours).sum(), [ours[first]], create_graph=True)
    (their_grad,) = torch.autograd.grad(loss(TF, *theirs).sum(), [theirs[first]],
                                        create_graph=True)
    (our_grad * our_grad).sum().backward()
    (their_grad * their_grad).sum().backward()
    for mine, reference in zip(ours, theirs, strict=True):
        if reference.grad is not None:
            np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(),
                                       rtol=1e-9, atol=1e-12)


def test_binary_cross_entropy_at_0_and_1_matches_torch():
    values = np.array([0.0, 1.0, 0.0, 1.0, 1e-30, 1 - 1e-16])
    targets = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    x, x_t = make_tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    out = F.binary_cross_entropy(x, make_tensor(targets), reduction="none")
    out_t = TF.binary_cross_entropy(x_t, torch.tensor(targets), reduction="none")
    np.testing.assert_allclose(out.numpy(), out_t.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    out_t.sum().backward()
    # PyTorch's 1e-12 floor of x (1 - x) is rounded through float32 (to 1e-12 - 4e-21)
    np.testing.assert_allclose(x.grad.numpy(), x_t.grad.numpy(), rtol=1e-8)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_loss_modules_match_torch_modules(dtype):
    rng = np.random.default_rng(3)
    probs, target = rng.uniform(0.05, 0.95, (5, 3)), rng.uniform(0, 1, (5, 3))
    logits, ids = rng.normal(size=(5, 3)), np.array([0, 2, 1, -100, 2])
    weight = rng.uniform(0.5, 2, 3)
    pairs = [
        (lambda lib: lib.L1Loss(), (probs, target)),
        (lambda lib: lib.MSELoss(reduction="sum"), (probs, target)),
        (lambda lib: lib.SmoothL1Loss(beta=0.2), (logits, target)),
        (lambda lib: lib.HuberLoss(delta=0.2, reduction="none"), (logits, target)),
        (lambda lib: lib.KLDivLoss(reduction="batchmean"), (np.log(probs), target)),
        (lambda lib: lib.BCELoss(), (probs, target)),
        (lambda lib: lib.BCEWithLogitsLoss(), (logits, target)),
        (lambda lib: lib.CrossEntropyLoss(label_smoothing=0.1), (logits, ids)),
        (lambda lib: lib.NLLLoss(reduction="sum"), (np.log(probs), ids)),
    ]
    for make, (x, y) in pairs:
        x = x.astype(dtype)
        y = y if y.dtype.kind == "i" else y.astype(dtype)
        ours = make(nn)(mg.tensor(x), mg.tensor(y)).numpy()
        theirs = make(torch.nn)(torch.tensor(x), torch.tensor(y)).numpy()
        tolerance = 1e-6 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(ours, theirs, rtol=tolerance, atol=tolerance,
                                   err_msg=type(make(nn)).__name__)
    weighted = (nn.BCEWithLogitsLoss(mg.tensor(weight), pos_weight=mg.tensor(weight)),
                torch.nn.BCEWithLogitsLoss(torch.tensor(weight), pos_weight=torch.tensor(weight)))
    for name, value in weighted[0].state_dict().items():
        np.testing.assert_array_equal(value.numpy(), weighted[1].state_dict()[name].numpy())
