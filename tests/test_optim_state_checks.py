"""Optimizers and schedulers check a loaded state dict before taking any of it: a state
from a corrupt checkpoint raises ValueError saying what does not fit, and leaves the
optimizer as it was; the state dicts they write themselves load back."""
from __future__ import annotations

import copy

import pytest
from state_compare import assert_identical

import minigrad as mg
from minigrad import nn, optim


def _trained(make_optimizer):
    mg.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = make_optimizer(model.parameters())
    model(mg.randn(4, 3)).sum().backward()
    opt.step()
    return model, opt


@pytest.mark.parametrize("make_optimizer", [
    lambda p: optim.Adam(p, lr=0.1),
    lambda p: optim.AdamW(p, lr=0.1, amsgrad=True),
    lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: optim.SGD(p, lr=0.1),
])
def test_own_state_dicts_load_back(make_optimizer):
    model, opt = _trained(make_optimizer)
    state = opt.state_dict()
    _, fresh = _trained(make_optimizer)
    fresh.load_state_dict(copy.deepcopy(state))
    assert_identical(fresh.state_dict(), state)


def test_a_schedulers_initial_lr_loads_into_an_optimizer_without_one():
    model, opt = _trained(lambda p: optim.Adam(p, lr=0.1))
    optim.lr_scheduler.StepLR(opt, step_size=2)
    state = opt.state_dict()
    fresh = optim.Adam(nn.Linear(3, 2).parameters(), lr=0.5)
    fresh.load_state_dict(state)  # "initial_lr" is not among its hyperparameters
    assert fresh.param_groups[0]["initial_lr"] == 0.1


def _adam_state():
    _, opt = _trained(lambda p: optim.Adam(p, lr=0.1))
    return opt.state_dict()


def _with(change):
    state = copy.deepcopy(_adam_state())
    change(state)
    return state


BAD = [
    (lambda s: s.pop("state"), "with the keys 'state' and 'param_groups'"),
    (lambda s: s.update(param_groups=[]), "0 parameter groups, the optimizer has 1"),
    (lambda s: s["param_groups"][0].update(lr="0.1"), "parameter group 0's 'lr' must be like"),
    (lambda s: s["param_groups"][0].update(lr=float("nan")), "'lr' must be like"),
    (lambda s: s["param_groups"][0].update(betas=(0.9, 0.99, 0.5)), "'betas' must be like"),
    (lambda s: s["param_groups"][0].update(betas=(0.9, "x")), "'betas'[1] must be like 0.999"),
    (lambda s: s["param_groups"][0].update(amsgrad=1), "'amsgrad' must be like False"),
    (lambda s: s["param_groups"][0].pop("eps"), "expected at least"),
    (lambda s: s["param_groups"][0].update(hook={"x": 1}), "'hook'"),
    (lambda s: s["param_groups"][0].update(params=[0]), "a parameter group of 1 parameters"),
    (lambda s: s["param_groups"][0].update(params=[0, 0]), "lists parameter 0, which is not"),
    (lambda s: s["param_groups"][0].update(params=[0, "1"]), "lists parameter '1'"),
    (lambda s: s["state"].update({5: {}}), "state for parameter 5"),
    (lambda s: s["state"][0].pop("exp_avg"), "has the entries ['exp_avg_sq', 'step']"),
    (lambda s: s["state"][0].update(exp_avg=mg.zeros(3)), "'exp_avg' must be a floating array "
                                                          "of the parameter's shape (2, 3), got "
                                                          "minigrad.float32 of shape (3,)"),
    (lambda s: s["state"][0].update(exp_avg=mg.zeros(2, 3, dtype=mg.int64)), "'exp_avg' must be"
                                                                             " a floating array"),
    (lambda s: s["state"][0].update(exp_avg=1.0), "'exp_avg' must be a floating array"),
    (lambda s: s["state"][0].update(step=1.5), "'step' must be an int >= 0, got 1.5"),
    (lambda s: s.update(state=[]), "'state' must be a dict"),
]


@pytest.mark.parametrize("change, problem", BAD, ids=[p for _, p in BAD])
def test_a_state_dict_that_does_not_fit_is_refused_and_changes_nothing(change, problem):
    _, opt = _trained(lambda p: optim.Adam(p, lr=0.1))
    before = copy.deepcopy(opt.state_dict())
    with pytest.raises(ValueError) as info:
        opt.load_state_dict(_with(change))
    assert problem in str(info.value), info.value
    after = opt.state_dict()
    assert after["param_groups"] == before["param_groups"]
    assert after["state"][0]["exp_avg"].tolist() == before["state"][0]["exp_avg"].tolist()


def test_schedulers_refuse_state_of_another_kind():
    _, opt = _trained(lambda p: optim.Adam(p, lr=0.1))
    scheduler = optim.lr_scheduler.NoamLR(opt, d_model=8, warmup_steps=4)
    state = scheduler.state_dict()
    for bad, problem in [({**state, "optimizer": None}, "expected the entries"),
                         ({k: v for k, v in state.items() if k != "last_epoch"},
                          "expected the entries"),
                         ({**state, "last_epoch": "3"}, "'last_epoch' must be like"),
                         ({**state, "base_lrs": [0.1, 0.2]}, "'base_lrs' must be like")]:
        with pytest.raises(ValueError, match=problem):
            scheduler.load_state_dict(bad)
    assert scheduler.state_dict() == state
    scheduler.load_state_dict({**state, "last_epoch": 5})
    assert scheduler.last_epoch == 5
