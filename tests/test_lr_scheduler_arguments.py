"""Every learning-rate schedule refuses an argument it cannot run with, when it is built:
an error naming the schedule and the argument and saying what was expected, never a
ZeroDivisionError, a negative lr or a NaN at some later step. One table of (constructor
call, error type, words the message must hold), and one of edge values still taken."""
from __future__ import annotations

import pytest

import minigrad as mg
from minigrad import nn, optim
from minigrad.optim.lr_scheduler import (
    CosineAnnealingLR,
    LambdaLR,
    LinearLR,
    NoamLR,
    OneCycleLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
)


def _sgd():
    """Two param groups, so that per-group arguments can be miscounted."""
    groups = [{"params": [nn.Parameter(mg.zeros(1))], "lr": lr} for lr in (0.1, 0.02)]
    return optim.SGD(groups, momentum=0.9)


def _cosine(o):
    return CosineAnnealingLR(o, T_max=5)


REFUSED = [
    # the base class, for every epoch-indexed schedule
    (lambda o: StepLR([o], 2), TypeError, ["StepLR", "expected an optimizer", "list"]),
    (lambda o: CosineAnnealingLR(o, 3, last_epoch=-2), ValueError,
     ["CosineAnnealingLR", "last_epoch", "an int >= -1", "-2"]),
    (lambda o: StepLR(o, 2, last_epoch=1.0), ValueError, ["StepLR", "last_epoch", "1.0"]),
    (lambda o: CosineAnnealingLR(o, 3, last_epoch=4), KeyError,
     ["CosineAnnealingLR", "initial_lr", "last_epoch=4"]),
    # LambdaLR
    (lambda o: LambdaLR(o, 0.5), TypeError, ["LambdaLR", "lr_lambda", "float"]),
    (lambda o: LambdaLR(o, [abs]), ValueError, ["LambdaLR", "expected 2 lr_lambdas, got 1"]),
    (lambda o: LambdaLR(o, [abs, None]), TypeError, ["LambdaLR", "NoneType",
                                                     "param_groups[1]"]),
    # StepLR
    (lambda o: StepLR(o, step_size=0), ValueError, ["StepLR", "step_size", "positive int",
                                                    "got 0"]),
    (lambda o: StepLR(o, step_size=-3), ValueError, ["StepLR", "step_size", "-3"]),
    (lambda o: StepLR(o, step_size=2.0), ValueError, ["StepLR", "step_size", "2.0"]),
    (lambda o: StepLR(o, step_size=True), ValueError, ["StepLR", "step_size", "True"]),
    (lambda o: StepLR(o, 2, gamma=0.0), ValueError, ["StepLR", "gamma", "(0, inf)", "0.0"]),
    (lambda o: StepLR(o, 2, gamma=-0.5), ValueError, ["StepLR", "gamma", "-0.5"]),
    (lambda o: StepLR(o, 2, gamma=float("nan")), ValueError, ["StepLR", "gamma", "nan"]),
    (lambda o: StepLR(o, 2, gamma="0.1"), ValueError, ["StepLR", "gamma", "'0.1'"]),
    # LinearLR
    (lambda o: LinearLR(o, start_factor=0.0), ValueError,
     ["LinearLR", "start_factor", "(0, 1]", "0.0"]),
    (lambda o: LinearLR(o, start_factor=1.5), ValueError, ["LinearLR", "start_factor", "1.5"]),
    (lambda o: LinearLR(o, end_factor=-0.1), ValueError,
     ["LinearLR", "end_factor", "[0, 1]", "-0.1"]),
    (lambda o: LinearLR(o, end_factor=1.01), ValueError, ["LinearLR", "end_factor", "1.01"]),
    (lambda o: LinearLR(o, total_iters=0), ValueError,
     ["LinearLR", "total_iters", "positive int", "0"]),
    (lambda o: LinearLR(o, total_iters=2.5), ValueError, ["LinearLR", "total_iters", "2.5"]),
    # CosineAnnealingLR
    (lambda o: CosineAnnealingLR(o, T_max=0), ValueError,
     ["CosineAnnealingLR", "T_max", "positive int", "0"]),
    (lambda o: CosineAnnealingLR(o, T_max=-5), ValueError, ["CosineAnnealingLR", "T_max", "-5"]),
    (lambda o: CosineAnnealingLR(o, T_max=10.5), ValueError,
     ["CosineAnnealingLR", "T_max", "10.5"]),
    (lambda o: CosineAnnealingLR(o, 5, eta_min=-1e-3), ValueError,
     ["CosineAnnealingLR", "eta_min", "[0, inf)", "-0.001"]),
    (lambda o: CosineAnnealingLR(o, 5, eta_min=float("inf")), ValueError,
     ["CosineAnnealingLR", "eta_min", "inf"]),
    # NoamLR
    (lambda o: NoamLR(o, d_model=0), ValueError, ["NoamLR", "d_model", "positive int", "0"]),
    (lambda o: NoamLR(o, d_model=64, warmup_steps=0), ValueError,
     ["NoamLR", "warmup_steps", "positive int", "0"]),
    (lambda o: NoamLR(o, d_model=64, warmup_steps=100.0), ValueError,
     ["NoamLR", "warmup_steps", "100.0"]),
    (lambda o: NoamLR(o, d_model=64, factor=-1.0), ValueError,
     ["NoamLR", "factor", "(0, inf)", "-1.0"]),
    # OneCycleLR
    (lambda o: OneCycleLR(o, max_lr=0.1), ValueError,
     ["OneCycleLR", "give total_steps, or epochs and steps_per_epoch"]),
    (lambda o: OneCycleLR(o, 0.1, total_steps=0), ValueError,
     ["OneCycleLR", "total_steps", "positive int", "0"]),
    (lambda o: OneCycleLR(o, 0.1, total_steps=10.0), ValueError,
     ["OneCycleLR", "total_steps", "10.0"]),
    (lambda o: OneCycleLR(o, 0.1, epochs=0, steps_per_epoch=5), ValueError,
     ["OneCycleLR", "epochs", "positive int", "0"]),
    (lambda o: OneCycleLR(o, 0.1, epochs=3, steps_per_epoch=-1), ValueError,
     ["OneCycleLR", "steps_per_epoch", "-1"]),
    (lambda o: OneCycleLR(o, 0.1, total_steps=10, pct_start=1.5), ValueError,
     ["OneCycleLR", "pct_start", "[0, 1]", "1.5"]),
    (lambda o: OneCycleLR(o, 0.1, total_steps=10, pct_start=-0.1), ValueError,
     ["OneCycleLR", "pct_start", "-0.1"]),
    (lambda o: OneCycleLR(o, 0.1, total_steps=10, anneal_strategy="exp"), ValueError,
     ["OneCycleLR", "anneal_strategy", "'cos' or 'linear'", "'exp'"]),
    (lambda o: OneCycleLR(o, [0.1], total_steps=10), ValueError,
     ["OneCycleLR", "expected 2 values of max_lr", "got 1"]),
    (lambda o: OneCycleLR(o, [0.1, -0.2], total_steps=10), ValueError,
     ["OneCycleLR", "max_lr[1]", "(0, inf)", "-0.2"]),
    (lambda o: OneCycleLR(o, 0.0, total_steps=10), ValueError, ["OneCycleLR", "max_lr", "0.0"]),
    (lambda o: OneCycleLR(o, 0.1, total_steps=10, div_factor=0), ValueError,
     ["OneCycleLR", "div_factor", "(0, inf)", "0"]),
    (lambda o: OneCycleLR(o, 0.1, total_steps=10, final_div_factor=-1e4), ValueError,
     ["OneCycleLR", "final_div_factor", "-10000.0"]),
    (lambda o: OneCycleLR(o, 0.1, total_steps=10, max_momentum=1.5), ValueError,
     ["OneCycleLR", "max_momentum", "[0, 1]", "1.5"]),
    (lambda o: OneCycleLR(o, 0.1, total_steps=10, base_momentum=[0.8, -0.8]), ValueError,
     ["OneCycleLR", "base_momentum[1]", "-0.8"]),
    (lambda o: OneCycleLR(optim.Optimizer([nn.Parameter(mg.zeros(1))], {"lr": 0.1}), 0.1,
                          total_steps=10), ValueError,
     ["OneCycleLR", "cycle_momentum needs an optimizer with momentum or betas"]),
    # SequentialLR
    (lambda o: SequentialLR(o, [], []), ValueError, ["SequentialLR", "at least one"]),
    (lambda o: SequentialLR(o, [_cosine(o), _cosine(o)], []), ValueError,
     ["SequentialLR", "2 schedulers need 1 milestones, got 0"]),
    (lambda o: SequentialLR(o, [_cosine(o), _cosine(o), _cosine(o)], [5, 3]), ValueError,
     ["SequentialLR", "milestones must be increasing", "[5, 3]"]),
    (lambda o: SequentialLR(o, [_cosine(o), _cosine(o), _cosine(o)], [3, 3]), ValueError,
     ["SequentialLR", "milestones must be increasing", "[3, 3]"]),
    (lambda o: SequentialLR(o, [_cosine(o), _cosine(o)], [0]), ValueError,
     ["SequentialLR", "milestones[0]", "positive int", "0"]),
    (lambda o: SequentialLR(o, [_cosine(o), _cosine(o)], [2.5]), ValueError,
     ["SequentialLR", "milestones[0]", "2.5"]),
    (lambda o: SequentialLR(o, [_cosine(o), StepLR(_sgd(), 2)], [3]), ValueError,
     ["SequentialLR", "schedulers[1]", "another optimizer"]),
    (lambda o: SequentialLR(o, [_cosine(o), ReduceLROnPlateau(o)], [3]), TypeError,
     ["SequentialLR", "schedulers[1]", "ReduceLROnPlateau"]),
    (lambda o: SequentialLR(o, [_cosine(o)], [], last_epoch=-3), ValueError,
     ["SequentialLR", "last_epoch", "an int >= -1", "-3"]),
    # ReduceLROnPlateau
    (lambda o: ReduceLROnPlateau([o]), TypeError, ["ReduceLROnPlateau", "expected an optimizer"]),
    (lambda o: ReduceLROnPlateau(o, factor=1.0), ValueError,
     ["ReduceLROnPlateau", "factor", "[0, 1)", "1.0"]),
    (lambda o: ReduceLROnPlateau(o, factor=-0.5), ValueError,
     ["ReduceLROnPlateau", "factor", "-0.5"]),
    (lambda o: ReduceLROnPlateau(o, mode="lowest"), ValueError,
     ["ReduceLROnPlateau", "mode", "'min' or 'max'", "'lowest'"]),
    (lambda o: ReduceLROnPlateau(o, threshold_mode="relative"), ValueError,
     ["ReduceLROnPlateau", "threshold_mode", "'rel' or 'abs'", "'relative'"]),
    (lambda o: ReduceLROnPlateau(o, patience=-1), ValueError,
     ["ReduceLROnPlateau", "patience", "an int >= 0", "-1"]),
    (lambda o: ReduceLROnPlateau(o, patience=2.0), ValueError,
     ["ReduceLROnPlateau", "patience", "2.0"]),
    (lambda o: ReduceLROnPlateau(o, cooldown=-2), ValueError,
     ["ReduceLROnPlateau", "cooldown", "an int >= 0", "-2"]),
    (lambda o: ReduceLROnPlateau(o, threshold=-1e-4), ValueError,
     ["ReduceLROnPlateau", "threshold", "[0, inf)", "-0.0001"]),
    (lambda o: ReduceLROnPlateau(o, eps=-1.0), ValueError, ["ReduceLROnPlateau", "eps", "-1.0"]),
    (lambda o: ReduceLROnPlateau(o, min_lr=-0.01), ValueError,
     ["ReduceLROnPlateau", "min_lr", "[0, inf)", "-0.01"]),
    (lambda o: ReduceLROnPlateau(o, min_lr=[0.0, -1.0]), ValueError,
     ["ReduceLROnPlateau", "min_lr[1]", "-1.0"]),
    (lambda o: ReduceLROnPlateau(o, min_lr=[0.1]), ValueError,
     ["ReduceLROnPlateau", "expected 2 min_lrs", "got 1"]),
]


def _table_id(case) -> str:
    return " ".join(case[2][:3])


@pytest.mark.parametrize("build, error, words", REFUSED, ids=[_table_id(c) for c in REFUSED])
def test_bad_arguments_are_refused_naming_the_schedule_and_the_argument(build, error, words):
    with pytest.raises(error) as info:
        build(_sgd())
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


def test_a_refused_one_cycle_leaves_the_param_groups_as_they_were():
    """Its schedule keys and momenta are written into the groups only once every argument
    has been checked."""
    optimizer = _sgd()
    before = [dict(group) for group in optimizer.param_groups]
    for bad in (dict(base_momentum=[0.8, -0.8]), dict(max_momentum=2.0)):
        with pytest.raises(ValueError, match="momentum"):
            OneCycleLR(optimizer, [0.1, 0.2], total_steps=10, **bad)
    assert optimizer.param_groups == before


TAKEN = [
    lambda o: StepLR(o, step_size=1, gamma=1.0),
    lambda o: StepLR(o, step_size=2, gamma=2),  # an int gamma, growing the lr, as PyTorch
    lambda o: LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=1),
    lambda o: CosineAnnealingLR(o, T_max=1, eta_min=0),
    lambda o: NoamLR(o, d_model=1, warmup_steps=1, factor=1),
    lambda o: OneCycleLR(o, 0.1, total_steps=1, pct_start=0.0),
    lambda o: OneCycleLR(o, [0.1, 0.2], epochs=1, steps_per_epoch=3, pct_start=1.0,
                         base_momentum=0.0, max_momentum=1.0),
    lambda o: SequentialLR(o, [_cosine(o), _cosine(o)], [1]),
    lambda o: ReduceLROnPlateau(o, factor=0.0, patience=0, threshold=0, cooldown=0,
                                min_lr=[0, 0.01], eps=0),
]


@pytest.mark.parametrize("build", TAKEN)
def test_edge_values_inside_the_rules_are_taken(build):
    optimizer = _sgd()
    scheduler = build(optimizer)
    optimizer.step()
    if isinstance(scheduler, ReduceLROnPlateau):
        scheduler.step(1.0)
    else:
        scheduler.step()
    assert all(lr >= 0 for lr in scheduler.get_last_lr())
