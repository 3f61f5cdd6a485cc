"""NAdam: Adam with Nesterov momentum and a momentum schedule (Dozat, 2016)."""
from __future__ import annotations

from minigrad.optim.per_parameter import (
    PerParameterOptimizer,
    check_adam_arguments,
    check_non_negative,
    update_moments,
)


class NAdam(PerParameterOptimizer):
    """PyTorch's rule, per parameter p with gradient g at step t (from 1):
        mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))
        mu_product = mu_1 * ... * mu_t
        exp_avg = exp_avg + (1 - beta1) * (g - exp_avg)
        exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g^2
        denom = sqrt(exp_avg_sq / (1 - beta2^t)) + eps
        p = p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
              - lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * exp_avg / denom
    'mu_product' is kept as a Python float (PyTorch keeps a 0-d tensor of the default
    dtype)."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_adam_arguments("NAdam", lr, eps, betas, weight_decay)
        check_non_negative("NAdam", momentum_decay=momentum_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable))

    def _state_kinds(self, group: dict) -> dict[str, str]:
        return {"step": "count", "mu_product": "number", "exp_avg": "array",
                "exp_avg_sq": "array"}

    def _initial_state(self, p, xp, group: dict) -> dict:
        return {"step": 0, "mu_product": 1.0, "exp_avg": xp.zeros_like(p),
                "exp_avg_sq": xp.zeros_like(p)}

    def _update_parameter(self, p, g, state: dict, group: dict, xp) -> None:
        (beta1, beta2), lr, step = group["betas"], group["lr"], state["step"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
        state["mu_product"] *= mu
        mu_product = state["mu_product"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        update_moments(exp_avg, exp_avg_sq, g, group["betas"])
        denom = xp.sqrt(exp_avg_sq / (1 - beta2 ** step))
        denom += group["eps"]
        p -= lr * (1.0 - mu) / (1.0 - mu_product) * (g / denom)
        p -= lr * mu_next / (1.0 - mu_product * mu_next) * (exp_avg / denom)
