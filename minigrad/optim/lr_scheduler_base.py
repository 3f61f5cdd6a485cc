"""LRScheduler: the base of the epoch/step-indexed learning-rate schedules.

As in PyTorch, building a scheduler sets the lr of every param group for the first
optimizer step (epoch 0), and each scheduler.step() after optimizer.step() moves to the
next epoch. Every schedule here is a closed form of (base_lr, last_epoch): it never reads
the lr it set before, so a schedule resumed from its state_dict continues exactly, and
rounding cannot accumulate over a long run.
"""
from __future__ import annotations

import copy
import numbers
import warnings

from minigrad.optim.optimizer import Optimizer, check_same_kind


class LRScheduler:
    """Base: subclasses define `get_lr()`, one lr per param group at `last_epoch`.

    `base_lrs` are the groups' `initial_lr`, which the first scheduler built on an
    optimizer records from the groups' lr (later ones keep it, so several schedulers can
    share an optimizer, as in SequentialLR). `last_epoch=-1` starts a fresh schedule;
    another value resumes one and needs `initial_lr` in every group."""

    _not_saved = ("optimizer",)  # attributes state_dict() leaves out

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected an optimizer, got "
                            f"{type(optimizer).__name__}")
        check_int(type(self).__name__, "last_epoch", last_epoch, minimum=-1)
        self.optimizer = optimizer
        for index, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"{type(self).__name__}: param_groups[{index}] has no 'initial_lr', which "
                    f"resuming a schedule (last_epoch={last_epoch}) needs: load the "
                    "optimizer's state_dict first, or build the scheduler with last_epoch=-1 "
                    "and load its state_dict"
                )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or step) and set the optimizer's lrs for it. `epoch`, which
        PyTorch deprecates, jumps to that epoch instead (exact: every schedule here is a
        closed form)."""
        if epoch is not None:
            warnings.warn(f"{type(self).__name__}.step(epoch) is deprecated (as in PyTorch); "
                          "call step() once per epoch", DeprecationWarning, stacklevel=2)
        self._set_epoch(self.last_epoch + 1 if epoch is None else epoch)

    def _set_epoch(self, epoch: int) -> None:
        self.last_epoch = epoch
        self._set_lrs(self.get_lr())

    def _set_lrs(self, lrs: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs, strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The lrs the last step() set, one per param group."""
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """A copy of every attribute but the optimizer and functions (which a checkpoint
        cannot hold)."""
        return {key: copy.deepcopy(value) for key, value in self.__dict__.items()
                if key not in self._not_saved}

    def load_state_dict(self, state_dict: dict) -> None:
        """Continue the schedule saved by state_dict() (the optimizer's lrs are not
        touched: load the optimizer's own state_dict for those). ValueError, changing
        nothing, for a dict with other entries or other kinds of value (a corrupt
        checkpoint)."""
        self._check_state(state_dict)
        self.__dict__.update(copy.deepcopy(state_dict))

    def _check_state(self, state_dict) -> None:
        """ValueError unless `state_dict` has this scheduler's entries, each of the kind
        state_dict() gives."""
        own = self.state_dict()
        if not isinstance(state_dict, dict) or set(state_dict) != set(own):
            found = sorted(map(str, state_dict)) if isinstance(state_dict, dict) else state_dict
            raise ValueError(f"{type(self).__name__}.load_state_dict: expected the entries "
                             f"{sorted(own)}, got {str(found)[:80]}")
        for name, value in state_dict.items():
            self._check_entry(name, value, own[name])

    def _check_entry(self, name: str, saved, current) -> None:
        """ValueError unless the loaded entry `name` is the same kind of value as this
        scheduler's own (a finite number for a number, ...: see check_same_kind)."""
        check_same_kind(saved, current, f"{type(self).__name__} state {name!r}")


def check_int(owner: str, name: str, value, minimum: int = 1) -> None:
    """ValueError naming `owner` and `name` unless `value` is an int (not a bool) of at
    least `minimum`."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum:
        return
    wanted = "a positive int" if minimum == 1 else f"an int >= {minimum}"
    raise ValueError(f"{owner}: {name} must be {wanted}, got {value!r}")


def check_number(owner: str, name: str, value, interval: str) -> None:
    """ValueError naming `owner` and `name` unless `value` is a real number (not a bool)
    in `interval`, written as in mathematics: "(0, 1]" holds 1 but not 0, "[0, inf)" every
    finite number from 0 up. NaN is in no interval."""
    is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if is_real and _in_interval(float(value), interval):
        return
    raise ValueError(f"{owner}: {name} must be a number in {interval}, got {value!r}")


def _in_interval(value: float, interval: str) -> bool:
    low, high = (float(end) for end in interval[1:-1].split(","))
    above_low = low < value if interval[0] == "(" else low <= value
    below_high = value < high if interval[-1] == ")" else value <= high
    return above_low and below_high
