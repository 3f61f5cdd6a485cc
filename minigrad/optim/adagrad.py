"""Adagrad: each coordinate's step shrinks with the sum of its squared gradients."""
from __future__ import annotations

from minigrad.optim.per_parameter import PerParameterOptimizer, check_non_negative


class Adagrad(PerParameterOptimizer):
    """PyTorch's rule, per parameter p with gradient g at step t (from 1):
        lr_t = lr / (1 + (t - 1) * lr_decay)
        sum = sum + g^2                       (sum starts at initial_accumulator_value)
        p = p - lr_t * g / (sqrt(sum) + eps)
    As in PyTorch, every parameter has its state ('step' 0 and 'sum') from the start,
    not only after its first gradient."""

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_non_negative("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for param in group["params"]:
            self.state[param] = self._initial_state(param.array, param.xp, group)

    def _state_kinds(self, group: dict) -> dict[str, str]:
        return {"step": "count", "sum": "array"}

    def _initial_state(self, p, xp, group: dict) -> dict:
        return {"step": 0, "sum": xp.full_like(p, group["initial_accumulator_value"])}

    def _update_parameter(self, p, g, state: dict, group: dict, xp) -> None:
        lr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state["sum"] += g * g
        p -= lr * (g / (xp.sqrt(state["sum"]) + group["eps"]))
