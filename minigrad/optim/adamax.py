"""Adamax: Adam with the infinity norm of past gradients in place of their root mean square."""
from __future__ import annotations

from minigrad.optim.per_parameter import PerParameterOptimizer, check_adam_arguments


class Adamax(PerParameterOptimizer):
    """PyTorch's rule, per parameter p with gradient g at step t (from 1):
        exp_avg = exp_avg + (1 - beta1) * (g - exp_avg)
        exp_inf = max(beta2 * exp_inf, |g| + eps)
        p = p - lr / (1 - beta1^t) * exp_avg / exp_inf"""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, foreach: bool | None = None,
                 *, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_adam_arguments("Adamax", lr, eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _state_kinds(self, group: dict) -> dict[str, str]:
        return {"step": "count", "exp_avg": "array", "exp_inf": "array"}

    def _update_parameter(self, p, g, state: dict, group: dict, xp) -> None:
        beta1, beta2 = group["betas"]
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg += (1 - beta1) * (g - exp_avg)
        exp_inf *= beta2
        xp.maximum(exp_inf, xp.abs(g) + group["eps"], out=exp_inf)
        lr = group["lr"] / (1 - beta1 ** state["step"])
        p -= lr * (exp_avg / exp_inf)
