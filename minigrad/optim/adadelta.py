"""Adadelta: steps scaled by the ratio of running averages of past steps and gradients."""
from __future__ import annotations

from minigrad.optim.per_parameter import PerParameterOptimizer, check_non_negative


class Adadelta(PerParameterOptimizer):
    """PyTorch's rule, per parameter p with gradient g:
        square_avg = rho * square_avg + (1 - rho) * g^2
        delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta^2
        p = p - lr * delta"""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative("Adadelta", lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Adadelta: Invalid rho value: {rho}")
        check_non_negative("Adadelta", eps=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable,
                                      foreach=foreach, differentiable=differentiable))

    def _state_kinds(self, group: dict) -> dict[str, str]:
        return {"step": "count", "square_avg": "array", "acc_delta": "array"}

    def _update_parameter(self, p, g, state: dict, group: dict, xp) -> None:
        rho, eps = group["rho"], group["eps"]
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg *= rho
        square_avg += (1 - rho) * (g * g)
        delta = xp.sqrt(acc_delta + eps) / xp.sqrt(square_avg + eps) * g
        acc_delta *= rho
        acc_delta += (1 - rho) * (delta * delta)
        p -= group["lr"] * delta
