"""Learning-rate schedules, PyTorch's torch.optim.lr_scheduler: LambdaLR, StepLR,
CosineAnnealingLR and NoamLR (the warmup schedule of "Attention Is All You Need"). As in
PyTorch, building a scheduler sets the lr for the first optimizer step, and
scheduler.step() after optimizer.step() advances it (see lr_scheduler_base)."""
from __future__ import annotations

import math
from collections.abc import Callable

from minigrad.optim.lr_scheduler_base import LRScheduler
from minigrad.optim.optimizer import Optimizer

__all__ = ["CosineAnnealingLR", "LRScheduler", "LambdaLR", "NoamLR", "StepLR"]


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
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        pairs = zip(self.base_lrs, self.lr_lambdas, strict=True)
        return [base * fn(self.last_epoch) for base, fn in pairs]


class StepLR(LRScheduler):
    """lr = base_lr * gamma^(last_epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2:
    half a cosine from base_lr down to eta_min over T_max epochs (SGDR without restarts).
    Past T_max it rises again along the same cosine (period 2 T_max), as PyTorch's does.

    PyTorch updates the lr recursively, scaling the group's current lr by the ratio of
    consecutive cosine factors; that approximates this closed form (equal up to
    rounding) as long as nothing else changes the lr between steps."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be a positive number of "
                             f"epochs, got {T_max}")
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
        if d_model <= 0 or warmup_steps <= 0:
            raise ValueError(f"NoamLR: d_model and warmup_steps must be positive, got "
                             f"{d_model} and {warmup_steps}")
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.factor = factor
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        step = self.last_epoch + 1
        lr = self.factor * self.d_model**-0.5 * min(step**-0.5,
                                                     step * self.warmup_steps**-1.5)
        return [lr] * len(self.base_lrs)
