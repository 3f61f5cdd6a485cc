"""Optimizers and schedules: update rules on hand-checkable cases, param groups,
zero_grad, and the warmup schedule's formula (state round trips are in
test_state_round_trips.py). Parameters and gradients live on MINIGRAD_TEST_DEVICE (see
conftest.py)."""

import numpy as np
import pytest
from helpers import test_device

import minigrad as mg
from minigrad import nn, optim
from minigrad.optim.lr_scheduler import LambdaLR, NoamLR, StepLR

pytestmark = pytest.mark.device
DEVICE = test_device()


def _tensor(values) -> mg.Tensor:
    return mg.tensor(values, device=DEVICE)


def _param(values):
    return nn.Parameter(_tensor(values))


def test_sgd_plain_step():
    p = _param([1.0, 2.0])
    p.grad = _tensor([0.5, -1.0])
    optim.SGD([p], lr=0.1).step()
    np.testing.assert_allclose(p.numpy(), [0.95, 2.1])


def test_sgd_momentum_buffer_starts_at_the_gradient():
    p = _param([0.0])
    opt = optim.SGD([p], lr=1.0, momentum=0.5, dampening=0.5)
    for _ in range(2):
        p.grad = _tensor([1.0])
        opt.step()
    # buffer: 1, then 0.5 * 1 + 0.5 * 1 = 1 -> p = -1 - 1
    np.testing.assert_allclose(p.numpy(), [-2.0])


def test_adam_first_step_is_lr_times_sign():
    p = _param([1.0, -1.0])
    p.grad = _tensor([3.0, -0.01])
    optim.Adam([p], lr=0.1).step()
    # bias-corrected m / sqrt(v) = sign(g) on the first step
    np.testing.assert_allclose(p.numpy(), [0.9, -0.9], rtol=1e-5)


def test_adamw_decays_weights_without_gradient_signal():
    p = _param([2.0])
    p.grad = _tensor([0.0])
    optim.AdamW([p], lr=0.1, weight_decay=0.5).step()
    np.testing.assert_allclose(p.numpy(), [2.0 * (1 - 0.05)], rtol=1e-6)


def test_parameters_without_grad_are_skipped_and_step_builds_no_graph():
    a, b = _param([1.0]), _param([1.0])
    a.grad = _tensor([1.0])
    opt = optim.Adam([a, b], lr=0.1)
    opt.step()
    assert b.numpy()[0] == 1.0 and a.numpy()[0] != 1.0
    assert a.grad_fn is None and b not in opt.state


def test_param_groups_with_own_hyperparameters():
    a, b = _param([1.0]), _param([1.0])
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    a.grad, b.grad = _tensor([1.0]), _tensor([1.0])
    opt.step()
    np.testing.assert_allclose([a.item(), b.item()], [0.9, 0.0])
    c = _param([0.0])
    opt.add_param_group({"params": c, "momentum": 0.9})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.9
    with pytest.raises(ValueError, match="more than one"):
        opt.add_param_group({"params": [a]})


def test_zero_grad():
    p = _param([1.0])
    p.grad = _tensor([2.0])
    opt = optim.SGD([p], lr=0.1)
    opt.zero_grad(set_to_none=False)
    assert p.grad.item() == 0.0
    opt.zero_grad()
    assert p.grad is None


def test_load_state_dict_rejects_mismatched_groups():
    opt = optim.SGD([_param([1.0])], lr=0.1)
    other = optim.SGD([_param([1.0]), _param([2.0])], lr=0.1)
    with pytest.raises(ValueError, match="group"):
        opt.load_state_dict(other.state_dict())


def test_load_state_dict_copies_the_state():
    """The loaded optimizer's state is its own: stepping it leaves the state dict it was
    loaded from (whose arrays are the first optimizer's) as it was."""
    source_param, loaded_param = _param([1.0, 2.0]), _param([1.0, 2.0])
    source = optim.Adam([source_param], lr=0.1)
    source_param.grad = _tensor([0.5, -1.0])
    source.step()
    saved = source.state_dict()
    before = saved["state"][0]["exp_avg"].numpy().copy()
    loaded = optim.Adam([loaded_param], lr=0.1)
    loaded.load_state_dict(saved)
    loaded_param.grad = _tensor([3.0, 3.0])
    loaded.step()
    np.testing.assert_array_equal(saved["state"][0]["exp_avg"].numpy(), before)


def test_noam_schedule_formula_and_peak():
    p = _param([0.0])
    opt = optim.Adam([p], lr=1.0)
    scheduler = NoamLR(opt, d_model=512, warmup_steps=4000, factor=2.0)
    lrs = []
    for _ in range(8000):
        lrs.append(opt.param_groups[0]["lr"])
        scheduler.step()
    for step in (1, 100, 4000, 7999):
        expected = 2.0 * 512**-0.5 * min(step**-0.5, step * 4000**-1.5)
        assert lrs[step - 1] == pytest.approx(expected)
    assert int(np.argmax(lrs)) + 1 == 4000
    assert scheduler.get_last_lr() == [opt.param_groups[0]["lr"]]


def test_lambda_and_step_lr():
    p = _param([0.0])
    opt = optim.SGD([p], lr=0.5)
    scheduler = LambdaLR(opt, lambda epoch: 1 / (epoch + 1))
    scheduler.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.25)
    opt = optim.SGD([p], lr=1.0)
    scheduler = StepLR(opt, step_size=2, gamma=0.1)
    seen = []
    for _ in range(5):
        seen.append(opt.param_groups[0]["lr"])
        scheduler.step()
    np.testing.assert_allclose(seen, [1, 1, 0.1, 0.1, 0.01])


def test_invalid_hyperparameters_raise():
    with pytest.raises(ValueError):
        optim.SGD([_param([1.0])], lr=-1)
    with pytest.raises(ValueError):
        optim.SGD([_param([1.0])], lr=0.1, nesterov=True)
    with pytest.raises(ValueError):
        optim.Adam([_param([1.0])], betas=(1.0, 0.9))
    with pytest.raises(ValueError):
        optim.Adam([])
