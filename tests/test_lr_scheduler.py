"""Learning-rate schedules: each compared step by step with torch.optim.lr_scheduler on
the same settings (two param groups with different lrs), resumed from a state_dict (also
through mg.save/mg.load) to continue exactly, and given bad settings."""
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


def _assert_resumes_exactly(make, steps_before: int, steps_after: int, tmp_path,
                            kind: str = "sgd"):
    """A scheduler rebuilt from a checkpoint of the optimizer and the scheduler (saved
    with mg.save) sets the same lrs, bit for bit, as the one that kept running."""
    optimizer = _minigrad_optimizer(kind)
    scheduler = make(optimizer)
    for _ in range(steps_before):
        optimizer.step()
        scheduler.step()
    path = tmp_path / "schedule.safetensors"
    mg.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, path)
    checkpoint = mg.load(path)
    resumed_optimizer = _minigrad_optimizer(kind)
    resumed = make(resumed_optimizer)
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    resumed.load_state_dict(checkpoint["scheduler"])
    assert resumed.get_last_lr() == scheduler.get_last_lr()
    for _ in range(steps_after):
        optimizer.step()
        scheduler.step()
        resumed_optimizer.step()
        resumed.step()
        assert resumed.get_last_lr() == scheduler.get_last_lr()
        for group, resumed_group in zip(optimizer.param_groups,
                                        resumed_optimizer.param_groups, strict=True):
            assert {k: v for k, v in group.items() if k != "params"} == \
                   {k: v for k, v in resumed_group.items() if k != "params"}


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


def test_cosine_annealing_resumes_exactly(tmp_path):
    _assert_resumes_exactly(lambda o: lr_scheduler.CosineAnnealingLR(o, 12, 0.001), 5, 15,
                            tmp_path)


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


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="CosineAnnealingLR: T_max"):
        lr_scheduler.CosineAnnealingLR(_minigrad_optimizer(), T_max=0)
    with pytest.raises(TypeError, match="CosineAnnealingLR: expected an optimizer"):
        lr_scheduler.CosineAnnealingLR([nn.Parameter(mg.zeros(1))], T_max=3)
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.CosineAnnealingLR(_minigrad_optimizer(), T_max=3, last_epoch=4)
