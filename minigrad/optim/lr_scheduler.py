"""Learning-rate schedules: LambdaLR, StepLR and NoamLR (the warmup schedule of
"Attention Is All You Need"). As in PyTorch, building a scheduler sets the lr for the
first optimizer step, and scheduler.step() after optimizer.step() advances it."""
from __future__ import annotations

from collections.abc import Callable

from minigrad.optim.optimizer import Optimizer, check_same_kind


class LRScheduler:
    """Base: `get_lr()` returns one lr per param group for epoch/step `last_epoch`."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            if last_epoch == -1:
                group["initial_lr"] = group["lr"]
            elif "initial_lr" not in group:
                raise KeyError("param 'initial_lr' is not set in the optimizer's groups when "
                               "resuming a scheduler (last_epoch != -1)")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def step(self) -> None:
        self.last_epoch += 1
        self._last_lr = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, self._last_lr, strict=True):
            group["lr"] = lr

    def get_last_lr(self) -> list[float]:
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """Everything but the optimizer (and functions, which cannot be saved)."""
        return {k: v for k, v in self.__dict__.items()
                if k not in ("optimizer", "lr_lambdas")}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what state_dict() returned; ValueError, changing nothing, for a dict
        with other entries or other kinds of value (a corrupt checkpoint)."""
        own = self.state_dict()
        if not isinstance(state_dict, dict) or set(state_dict) != set(own):
            found = sorted(map(str, state_dict)) if isinstance(state_dict, dict) else state_dict
            raise ValueError(f"{type(self).__name__}.load_state_dict: expected the entries "
                             f"{sorted(own)}, got {str(found)[:80]}")
        for name, value in state_dict.items():
            check_same_kind(value, own[name], f"{type(self).__name__} state {name!r}")
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(last_epoch) (one function, or one per param group)."""

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
