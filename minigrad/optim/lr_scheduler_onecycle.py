"""OneCycleLR: the 1cycle policy (Smith and Topsakal, "Super-Convergence"), with
PyTorch's phases and momentum cycling."""
from __future__ import annotations

import math

from minigrad.optim.lr_scheduler_base import LRScheduler, check_int, check_number
from minigrad.optim.optimizer import Optimizer


class OneCycleLR(LRScheduler):
    """Per optimizer step (not epoch), for total_steps steps:
        warm up from initial_lr = max_lr / div_factor to max_lr over the first
        pct_start of the steps, then anneal to min_lr = initial_lr / final_div_factor;
        three_phase: warm up, come back down to initial_lr over as many steps, then
        anneal to min_lr.
    Each phase anneals along half a cosine (anneal_strategy="cos") or a line ("linear").
    With cycle_momentum, SGD's momentum (or Adam's beta1) moves the opposite way, between
    max_momentum and base_momentum. The schedule keys initial_lr, max_lr and min_lr
    (and max_momentum, base_momentum) live in the param groups, as in PyTorch. Stepping
    past total_steps raises."""

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"OneCycleLR: expected an optimizer, got {type(optimizer).__name__}")
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        check_number("OneCycleLR", "pct_start", pct_start, "[0, 1]")
        check_number("OneCycleLR", "div_factor", div_factor, "(0, inf)")
        check_number("OneCycleLR", "final_div_factor", final_div_factor, "(0, inf)")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        self._phases = _phases(pct_start, self.total_steps, three_phase)
        groups = optimizer.param_groups
        peaks = _per_group("max_lr", max_lr, groups, "(0, inf)")
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"OneCycleLR: cycle_momentum needs an optimizer with momentum "
                                 f"or betas, {type(optimizer).__name__} has neither (pass "
                                 "cycle_momentum=False)")
            self.use_beta1 = "betas" in optimizer.defaults
            highs = _per_group("max_momentum", max_momentum, groups, "[0, 1]")
            lows = _per_group("base_momentum", base_momentum, groups, "[0, 1]")
        if last_epoch == -1:  # every argument is checked: now write the groups' schedule keys
            for group, peak in zip(groups, peaks, strict=True):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
            if cycle_momentum:
                for group, high, low in zip(groups, highs, lows, strict=True):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step} times, but total_steps is "
                             f"{self.total_steps}")
        phase_start, (phase_end, lr_keys, momentum_keys) = self._phase_of(step)
        progress = (step - phase_start) / (phase_end - phase_start)
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(self._anneal(group[lr_keys[0]], group[lr_keys[1]], progress))
            if self.cycle_momentum:
                momentum = self._anneal(group[momentum_keys[0]], group[momentum_keys[1]],
                                        progress)
                self._set_momentum(group, momentum)
        return lrs

    def _phase_of(self, step: int) -> tuple:
        """(first step, phase) of the phase `step` falls in; the last phase extends to
        total_steps."""
        phase_start = 0.0
        for phase in self._phases[:-1]:
            if step <= phase[0]:
                return phase_start, phase
            phase_start = phase[0]
        return phase_start, self._phases[-1]

    def _anneal(self, start: float, end: float, progress: float) -> float:
        """From start (progress 0) to end (progress 1)."""
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * progress) + 1)
        return (end - start) * progress + start

    def _set_momentum(self, group: dict, momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum


def _total_steps(total_steps, epochs, steps_per_epoch) -> int:
    if total_steps is not None:
        check_int("OneCycleLR", "total_steps", total_steps)
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
    check_int("OneCycleLR", "epochs", epochs)
    check_int("OneCycleLR", "steps_per_epoch", steps_per_epoch)
    return epochs * steps_per_epoch


def _phases(pct_start: float, total_steps: int, three_phase: bool) -> list:
    """(last step of the phase, (lr from, lr to), (momentum from, momentum to)) per
    phase, the keys naming param-group entries."""
    warmup_end = float(pct_start * total_steps) - 1
    up = (warmup_end, ("initial_lr", "max_lr"), ("max_momentum", "base_momentum"))
    if not three_phase:
        return [up, (total_steps - 1, ("max_lr", "min_lr"), ("base_momentum", "max_momentum"))]
    return [
        up,
        (float(2 * pct_start * total_steps) - 2, ("max_lr", "initial_lr"),
         ("base_momentum", "max_momentum")),
        (total_steps - 1, ("initial_lr", "min_lr"), ("max_momentum", "max_momentum")),
    ]


def _per_group(name: str, value, groups: list, interval: str) -> list:
    """One value per param group, each in `interval`: a list is checked, a number
    repeated."""
    if not isinstance(value, (list, tuple)):
        value = [value] * len(groups)
    elif len(value) != len(groups):
        raise ValueError(f"OneCycleLR: expected {len(groups)} values of {name} (one per "
                         f"param group), got {len(value)}")
    for index, item in enumerate(value):
        check_number("OneCycleLR", name if len(groups) == 1 else f"{name}[{index}]", item,
                     interval)
    return list(value)
