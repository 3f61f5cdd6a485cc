"""ReduceLROnPlateau: lower the lr when a watched metric stops improving."""
from __future__ import annotations

import math
import numbers
import warnings

from minigrad.optim.lr_scheduler_base import LRScheduler, check_int, check_number
from minigrad.optim.optimizer import Optimizer


class ReduceLROnPlateau(LRScheduler):
    """Call step(metric) once per epoch (a validation loss, say). A metric is an
    improvement when it beats the best so far by the threshold:
        mode="min": metric < best * (1 - threshold)  (rel)  or  best - threshold  (abs)
        mode="max": metric > best * (1 + threshold)  (rel)  or  best + threshold  (abs)
    After more than `patience` epochs in a row without one, every group's lr becomes
    max(lr * factor, min_lr) (a change smaller than eps is skipped), and the next
    `cooldown` epochs count no bad epochs. The lrs it starts from are the optimizer's."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: float | list[float] = 0, eps: float = 1e-8) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"ReduceLROnPlateau: expected an optimizer, got "
                            f"{type(optimizer).__name__}")
        check_number("ReduceLROnPlateau", "factor", factor, "[0, 1)")
        check_int("ReduceLROnPlateau", "patience", patience, minimum=0)
        check_number("ReduceLROnPlateau", "threshold", threshold, "[0, inf)")
        check_int("ReduceLROnPlateau", "cooldown", cooldown, minimum=0)
        check_number("ReduceLROnPlateau", "eps", eps, "[0, inf)")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got "
                             f"{threshold_mode!r}")
        groups = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != groups:
                raise ValueError(f"ReduceLROnPlateau: expected {groups} min_lrs (one per param "
                                 f"group), got {len(min_lr)}")
            for index, value in enumerate(min_lr):
                check_number("ReduceLROnPlateau", f"min_lr[{index}]", value, "[0, inf)")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            check_number("ReduceLROnPlateau", "min_lr", min_lr, "[0, inf)")
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * groups
        self.optimizer = optimizer
        self.mode = mode
        self.factor = factor
        self.patience = patience
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self, metrics, epoch: int | None = None) -> None:
        """Record one epoch's metric (a number or a 0-d tensor); lower the lrs if it has
        not improved for more than `patience` epochs. `epoch` (deprecated in PyTorch)
        only sets last_epoch."""
        current = float(metrics)
        if epoch is not None:
            warnings.warn("ReduceLROnPlateau.step(metrics, epoch) is deprecated (as in "
                          "PyTorch); call step(metrics) once per epoch", DeprecationWarning,
                          stacklevel=2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lrs()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_lr(self) -> list[float]:
        return self.get_last_lr()

    def _check_entry(self, name: str, saved, current) -> None:
        if name == "best":  # starts at +-inf and stays there until a metric improves on it
            if isinstance(saved, numbers.Real) and not isinstance(saved, bool) \
                    and not math.isnan(saved):
                return
            raise ValueError(f"ReduceLROnPlateau state 'best' must be a number or +-inf, got "
                             f"{str(saved)[:60]}")
        super()._check_entry(name, saved, current)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, metric: float) -> bool:
        if self.mode == "min":
            bar = self.best * (1 - self.threshold) if self.threshold_mode == "rel" \
                else self.best - self.threshold
            return metric < bar
        bar = self.best * (1 + self.threshold) if self.threshold_mode == "rel" \
            else self.best + self.threshold
        return metric > bar

    def _reduce_lrs(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"ReduceLROnPlateau: the optimizer has {len(groups)} param groups, but "
                    f"{len(self.min_lrs)} min_lrs were given (a group was added after the "
                    "scheduler was built): set scheduler.min_lrs to one value per group"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs, strict=True):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new
