"""RAdam: Adam whose adaptive step is rectified while the variance estimate is young
(Liu et al., 2019)."""
from __future__ import annotations

import math

from minigrad.optim.per_parameter import (
    PerParameterOptimizer,
    check_adam_arguments,
    update_moments,
)


class RAdam(PerParameterOptimizer):
    """PyTorch's rule, per parameter p with gradient g at step t (from 1):
        exp_avg = exp_avg + (1 - beta1) * (g - exp_avg)
        exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g^2
        m_hat = exp_avg / (1 - beta1^t)
        rho_inf = 2 / (1 - beta2) - 1,  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        rho_t > 5: r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
                   p = p - lr * m_hat * sqrt(1 - beta2^t) / (sqrt(exp_avg_sq) + eps) * r
        otherwise: p = p - lr * m_hat          (too few steps to trust exp_avg_sq)"""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_adam_arguments("RAdam", lr, eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      differentiable=differentiable))

    def _state_kinds(self, group: dict) -> dict[str, str]:
        return {"step": "count", "exp_avg": "array", "exp_avg_sq": "array"}

    def _update_parameter(self, p, g, state: dict, group: dict, xp) -> None:
        (beta1, beta2), lr, step = group["betas"], group["lr"], state["step"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        update_moments(exp_avg, exp_avg_sq, g, group["betas"])
        bias_correction2 = 1 - beta2 ** step
        corrected_exp_avg = exp_avg / (1 - beta1 ** step)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
        if rho_t <= 5.0:
            p -= corrected_exp_avg * lr
            return
        rectification = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                  / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        adaptive_lr = math.sqrt(bias_correction2) / (xp.sqrt(exp_avg_sq) + group["eps"])
        p -= corrected_exp_avg * lr * adaptive_lr * rectification
