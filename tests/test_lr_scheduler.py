"""Learning-rate schedules: each compared step by step with torch.optim.lr_scheduler on
the same settings (two param groups with different lrs), and resumed from a state_dict
(also through mg.save/mg.load) to continue exactly. Bad arguments:
test_lr_scheduler_arguments.py; every state round trip: test_state_round_trips.py."""
from __future__ import annotations

import math

import pytest

import minigrad as mg
from minigrad import nn, optim
from minigrad.optim import lr_scheduler

torch = pytest.importorskip("torch")
TORCH_SCHEDULERS = torch.optim.lr_scheduler

GROUP_LRS = (0.1, 0.02)


def _minigrad_optimizer(kind: str = "sgd"):
    groups = [{"params": [nn.Parameter(mg.zeros(1))], "lr": lr} for lr in GROUP_LRS]
    if kind == "adam":
        return optim.Adam(groups)
    return optim.SGD(groups, momentum=0.9)


def _torch_optimizer(kind: str = "sgd"):
    groups = [{"params": [torch.nn.Parameter(torch.zeros(1))], "lr": lr} for lr in GROUP_LRS]
    if kind == "adam":
        return torch.optim.Adam(groups)
    return torch.optim.SGD(groups, momentum=0.9)


def _run(make, optimizer, steps: int) -> list[list[float]]:
    """The lrs of every group before each of `steps` optimizer steps."""
    scheduler = make(optimizer)
    seen = []
    for _ in range(steps):
        seen.append([group["lr"] for group in optimizer.param_groups])
        assert scheduler.get_last_lr() == seen[-1]
        optimizer.step()
        scheduler.step()
    return seen


def _assert_same_schedule(ours, theirs, rel=1e-12, abs_=1e-15):
    assert len(ours) == len(theirs)
    for step, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == pytest.approx(reference, rel=rel, abs=abs_), f"step {step}"


# ----------------------------------------------------------------------------- cosine


@pytest.mark.parametrize("T_max, eta_min", [(10, 0.0), (7, 0.001), (1, 0.0), (25, 0.05)])
def test_cosine_annealing_matches_torch(T_max, eta_min):
    steps = 3 * T_max + 2  # past T_max the cosine rises again; PyTorch's does too
    ours = _run(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max, eta_min),
                _minigrad_optimizer(), steps)
    theirs = _run(lambda o: TORCH_SCHEDULERS.CosineAnnealingLR(o, T_max, eta_min),
                  _torch_optimizer(), steps)
    _assert_same_schedule(ours, theirs)


def test_cosine_annealing_closed_form():
    optimizer = _minigrad_optimizer()
    scheduler = lr_scheduler.CosineAnnealingLR(optimizer, T_max=4, eta_min=0.01)
    lrs = []
    for _ in range(5):
        lrs.append(scheduler.get_last_lr()[0])
        scheduler.step()
    expected = [0.01 + 0.09 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)]
    assert lrs == pytest.approx(expected, rel=1e-15)
    assert lrs[0] == 0.1 and lrs[4] == pytest.approx(0.01, rel=1e-15)


def test_cosine_annealing_resumed_with_last_epoch_continues_the_schedule():
    optimizer = _minigrad_optimizer()
    reference = lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)
    for _ in range(4):
        reference.step()
    resumed = lr_scheduler.CosineAnnealingLR(optimizer, T_max=10, last_epoch=3)
    assert resumed.get_last_lr() == reference.get_last_lr()


# ----------------------------------------------------------------------------- base class


def test_a_second_scheduler_keeps_the_recorded_initial_lr():
    optimizer = _minigrad_optimizer()
    lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    optimizer.step()
    cosine = lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)
    assert cosine.base_lrs == list(GROUP_LRS)


def test_state_dict_is_a_copy_without_the_optimizer():
    optimizer = _minigrad_optimizer()
    scheduler = lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)
    state = scheduler.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 0
    state["base_lrs"][0] = 123.0
    assert scheduler.base_lrs == list(GROUP_LRS)


# ----------------------------------------------------------------------------- linear


@pytest.mark.parametrize("start, end, total", [(0.25, 1.0, 4), (1.0, 0.1, 6), (0.5, 0.0, 3),
                                               (1 / 3, 1.0, 5)])
def test_linear_matches_torch(start, end, total):
    ours = _run(lambda o: lr_scheduler.LinearLR(o, start, end, total), _minigrad_optimizer(),
                total + 5)
    theirs = _run(lambda o: TORCH_SCHEDULERS.LinearLR(o, start, end, total),
                  _torch_optimizer(), total + 5)
    _assert_same_schedule(ours, theirs)


# ----------------------------------------------------------------------------- one cycle


def _momenta(optimizer) -> list:
    return [group["betas"] if "betas" in group else group["momentum"]
            for group in optimizer.param_groups]


ONE_CYCLE_SETTINGS = [
    dict(max_lr=0.5, total_steps=20),
    dict(max_lr=[0.5, 0.2], total_steps=17, anneal_strategy="linear"),
    dict(max_lr=1.0, epochs=3, steps_per_epoch=7, three_phase=True, pct_start=0.25),
    dict(max_lr=0.3, total_steps=12, three_phase=True, anneal_strategy="linear",
         div_factor=10.0, final_div_factor=100.0, base_momentum=0.8, max_momentum=0.9),
    dict(max_lr=0.3, total_steps=9, cycle_momentum=False),
]


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("settings", ONE_CYCLE_SETTINGS)
def test_one_cycle_matches_torch_with_its_momentum_cycle(settings, kind):
    total = settings.get("total_steps") or settings["epochs"] * settings["steps_per_epoch"]
    schedules = []
    for make_optimizer, library in ((_minigrad_optimizer, lr_scheduler),
                                    (_torch_optimizer, TORCH_SCHEDULERS)):
        optimizer = make_optimizer(kind)
        scheduler = library.OneCycleLR(optimizer, **settings)
        seen = []
        for _ in range(total):  # PyTorch allows total_steps steps after the first lr
            seen.append(([group["lr"] for group in optimizer.param_groups],
                         _momenta(optimizer)))
            optimizer.step()
            scheduler.step()
        schedules.append(seen)
    ours, theirs = schedules
    _assert_same_schedule([lrs for lrs, _ in ours], [lrs for lrs, _ in theirs])
    for step, ((_, mine), (_, reference)) in enumerate(zip(ours, theirs, strict=True)):
        if kind == "adam":  # beta1 cycles, beta2 stays
            mine, reference = [*sum(mine, ())], [*sum(reference, ())]
        assert mine == pytest.approx(reference, rel=1e-12), f"step {step}"


def test_one_cycle_peaks_at_max_lr_and_ends_at_min_lr():
    optimizer = _minigrad_optimizer()
    scheduler = lr_scheduler.OneCycleLR(optimizer, max_lr=1.0, total_steps=10, pct_start=0.5,
                                        anneal_strategy="linear")
    lrs = [scheduler.get_last_lr()[0]]
    for _ in range(9):
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    assert lrs[0] == pytest.approx(1 / 25) and lrs[4] == pytest.approx(1.0)
    assert lrs[-1] == pytest.approx(1 / 25 / 1e4)
    assert optimizer.param_groups[0]["momentum"] == pytest.approx(0.95)


def test_one_cycle_past_total_steps_raises():
    optimizer = _minigrad_optimizer()
    scheduler = lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=3)
    for _ in range(3):
        scheduler.step()
    with pytest.raises(ValueError, match="OneCycleLR: tried to step 4 times, but total_steps"):
        scheduler.step()


# ----------------------------------------------------------------------------- sequential


SEQUENCES = {
    "warmup then cosine": (
        lambda lib, o: [lib.LinearLR(o, 0.1, 1.0, 3), lib.CosineAnnealingLR(o, 8, 0.001)], [3]),
    "three schedules": (
        lambda lib, o: [lib.LinearLR(o, 0.5, 1.0, 2), lib.StepLR(o, 2, 0.5),
                        lib.CosineAnnealingLR(o, 5)], [4, 9]),
    "milestone at the first step": (
        lambda lib, o: [lib.StepLR(o, 1, 0.9), lib.LambdaLR(o, lambda e: 1 / (e + 1))], [1]),
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_sequential_matches_torch(name):
    make_schedulers, milestones = SEQUENCES[name]
    ours = _run(lambda o: lr_scheduler.SequentialLR(
        o, make_schedulers(lr_scheduler, o), milestones), _minigrad_optimizer(), 16)
    theirs = _run(lambda o: TORCH_SCHEDULERS.SequentialLR(
        o, make_schedulers(TORCH_SCHEDULERS, o), milestones), _torch_optimizer(), 16)
    _assert_same_schedule(ours, theirs)


# ----------------------------------------------------------------------------- plateau


PLATEAU_METRICS = [1.0, 0.9, 0.9, 0.9, 0.9, 0.95, 0.8, 0.8, 0.8, 0.79999, 0.8, 0.81, 0.7,
                   0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7]
PLATEAU_SETTINGS = [
    dict(patience=2),
    dict(patience=0, factor=0.5, cooldown=2),
    dict(mode="max", patience=1, factor=0.3, threshold=0.05),
    dict(patience=1, threshold_mode="abs", threshold=0.05, min_lr=[0.05, 0.001]),
    dict(patience=0, factor=0.5, min_lr=0.02, eps=0.004),
]


@pytest.mark.parametrize("settings", PLATEAU_SETTINGS)
def test_reduce_on_plateau_matches_torch(settings):
    schedules = []
    for make_optimizer, library in ((_minigrad_optimizer, lr_scheduler),
                                    (_torch_optimizer, TORCH_SCHEDULERS)):
        optimizer = make_optimizer()
        scheduler = library.ReduceLROnPlateau(optimizer, **settings)
        seen = []
        for metric in PLATEAU_METRICS:
            optimizer.step()
            scheduler.step(metric)
            seen.append(scheduler.get_last_lr())
            assert seen[-1] == [group["lr"] for group in optimizer.param_groups]
        schedules.append(seen)
    _assert_same_schedule(*schedules, rel=0)
    assert schedules[0][0] != schedules[0][-1]  # every setting reduces the lr at least once


def test_reduce_on_plateau_takes_a_0d_tensor_metric():
    lrs = []
    for as_metric in (float, mg.tensor):
        optimizer = _minigrad_optimizer()
        scheduler = lr_scheduler.ReduceLROnPlateau(optimizer, patience=1, cooldown=1)
        for metric in PLATEAU_METRICS:
            scheduler.step(as_metric(metric))
        lrs.append(scheduler.get_last_lr())
    assert lrs[0] == lrs[1] != list(GROUP_LRS)


def test_step_with_an_epoch_jumps_there_as_pytorch_does():
    optimizer, optimizer_t = _minigrad_optimizer(), _torch_optimizer()
    ours = lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)
    theirs = TORCH_SCHEDULERS.CosineAnnealingLR(optimizer_t, T_max=10)
    with pytest.warns(DeprecationWarning, match="step\\(epoch\\) is deprecated"):
        ours.step(7)
    with pytest.warns(UserWarning):
        theirs.step(7)
    assert ours.last_epoch == 7
    assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
