"""Learning-rate schedules, PyTorch's torch.optim.lr_scheduler: LambdaLR, StepLR,
LinearLR, CosineAnnealingLR, OneCycleLR, SequentialLR, ReduceLROnPlateau and NoamLR (the
warmup schedule of "Attention Is All You Need"). As in PyTorch, building a scheduler sets
the lr for the first optimizer step, and scheduler.step() after optimizer.step() advances
it (see lr_scheduler_base)."""
from __future__ import annotations

import copy
import math
from bisect import bisect_right
from collections.abc import Callable, Sequence

from minigrad.optim.lr_scheduler_base import LRScheduler, check_int, check_number
from minigrad.optim.lr_scheduler_onecycle import OneCycleLR
from minigrad.optim.lr_scheduler_plateau import ReduceLROnPlateau
from minigrad.optim.optimizer import Optimizer

__all__ = [
    "CosineAnnealingLR", "LRScheduler", "LambdaLR", "LinearLR", "NoamLR", "OneCycleLR",
    "ReduceLROnPlateau", "SequentialLR", "StepLR",
]


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(last_epoch) (one function, or one per param group)."""

    _not_saved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list,
                 last_epoch: int = -1) -> None:
        groups = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != groups:
                raise ValueError(f"LambdaLR: expected {groups} lr_lambdas, got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * groups
        for index, function in enumerate(self.lr_lambdas):
            if not callable(function):
                raise TypeError(f"LambdaLR: lr_lambda must be a function of the epoch (or one "
                                f"per param group), got {type(function).__name__} for "
                                f"param_groups[{index}]")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        pairs = zip(self.base_lrs, self.lr_lambdas, strict=True)
        return [base * fn(self.last_epoch) for base, fn in pairs]


class StepLR(LRScheduler):
    """lr = base_lr * gamma^(last_epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        check_int("StepLR", "step_size", step_size)
        check_number("StepLR", "gamma", gamma, "(0, inf)")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """lr = base_lr * (start_factor + (end_factor - start_factor) * min(last_epoch,
    total_iters) / total_iters): a straight line from start_factor * base_lr to
    end_factor * base_lr over total_iters epochs, then constant (a linear warmup with the
    defaults of PyTorch's closed form)."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        check_number("LinearLR", "start_factor", start_factor, "(0, 1]")
        check_number("LinearLR", "end_factor", end_factor, "[0, 1]")
        check_int("LinearLR", "total_iters", total_iters)
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * progress
        return [base * factor for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2:
    half a cosine from base_lr down to eta_min over T_max epochs (SGDR without restarts).
    Past T_max it rises again along the same cosine (period 2 T_max), as PyTorch's does.

    PyTorch updates the lr recursively, scaling the group's current lr by the ratio of
    consecutive cosine factors; that approximates this closed form (equal up to
    rounding) as long as nothing else changes the lr between steps."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        check_int("CosineAnnealingLR", "T_max", T_max)
        check_number("CosineAnnealingLR", "eta_min", eta_min, "[0, inf)")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]


class NoamLR(LRScheduler):
    """lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), step =
    last_epoch + 1: linear warmup for warmup_steps steps, then decay as 1/sqrt(step).
    The optimizer's own lr is replaced, not scaled (pass any lr, e.g. 1.0)."""

    def __init__(self, optimizer: Optimizer, d_model: int, warmup_steps: int = 4000,
                 factor: float = 1.0, last_epoch: int = -1) -> None:
        check_int("NoamLR", "d_model", d_model)
        check_int("NoamLR", "warmup_steps", warmup_steps)
        check_number("NoamLR", "factor", factor, "(0, inf)")
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.factor = factor
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        step = self.last_epoch + 1
        lr = self.factor * self.d_model**-0.5 * min(step**-0.5,
                                                     step * self.warmup_steps**-1.5)
        return [lr] * len(self.base_lrs)


class SequentialLR(LRScheduler):
    """Run `schedulers` one after another: schedulers[i] takes over at epoch
    milestones[i - 1], restarting from its own epoch 0 (so each schedule is written as if
    it ran alone, e.g. LinearLR warmup for 5 epochs, then CosineAnnealingLR)."""

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler],
                 milestones: Sequence[int], last_epoch: int = -1) -> None:
        _check_sequence(optimizer, schedulers, milestones)
        check_int("SequentialLR", "last_epoch", last_epoch, minimum=-1)
        self.optimizer = optimizer
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        # building each scheduler stepped it to epoch 0: undo that and start only the first
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for scheduler in self._schedulers:
            scheduler.last_epoch -= 1
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first.step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._set_epoch(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict:
        """This schedule's position, with the state_dict of every scheduler in it."""
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return copy.deepcopy(state)

    def load_state_dict(self, state_dict: dict) -> None:
        self._check_state(state_dict)
        for scheduler, saved in zip(self._schedulers, state_dict["_schedulers"], strict=True):
            scheduler.load_state_dict(saved)
        self.__dict__.update(copy.deepcopy(
            {key: value for key, value in state_dict.items() if key != "_schedulers"}))


def _check_sequence(optimizer: Optimizer, schedulers, milestones) -> None:
    if not schedulers:
        raise ValueError("SequentialLR: expected at least one scheduler, got none")
    for index, scheduler in enumerate(schedulers):
        if isinstance(scheduler, (ReduceLROnPlateau, SequentialLR)) \
                or not isinstance(scheduler, LRScheduler):
            raise TypeError(f"SequentialLR: schedulers[{index}] is a "
                            f"{type(scheduler).__name__}; expected an epoch-indexed schedule "
                            "(not ReduceLROnPlateau, whose step() takes a metric, nor a "
                            "SequentialLR)")
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"SequentialLR: schedulers[{index}] "
                             f"({type(scheduler).__name__}) drives another optimizer")
    if len(milestones) != len(schedulers) - 1:
        raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need "
                         f"{len(schedulers) - 1} milestones, got {len(milestones)}")
    for index, milestone in enumerate(milestones):
        check_int("SequentialLR", f"milestones[{index}]", milestone)
    if any(later <= earlier for earlier, later in zip(milestones, milestones[1:])):
        raise ValueError(f"SequentialLR: milestones must be increasing (each scheduler runs "
                         f"at least one epoch), got {list(milestones)}")
