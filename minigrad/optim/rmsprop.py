"""RMSprop: gradients divided by a running root mean square of past gradients."""
from __future__ import annotations

from minigrad.optim.per_parameter import PerParameterOptimizer, check_non_negative


class RMSprop(PerParameterOptimizer):
    """PyTorch's rule, per parameter p with gradient g:
        square_avg = alpha * square_avg + (1 - alpha) * g^2
        avg = sqrt(square_avg) + eps
            centered: grad_avg = alpha * grad_avg + (1 - alpha) * g,
                      avg = sqrt(square_avg - grad_avg^2) + eps
        p = p - lr * g / avg
            momentum > 0: momentum_buffer = momentum * momentum_buffer + g / avg,
                          p = p - lr * momentum_buffer"""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_non_negative("RMSprop", lr=lr, eps=eps, momentum=momentum,
                           weight_decay=weight_decay, alpha=alpha)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def _state_kinds(self, group: dict) -> dict[str, str]:
        kinds = {"step": "count", "square_avg": "array"}
        if group["momentum"] > 0:
            kinds["momentum_buffer"] = "array"
        if group["centered"]:
            kinds["grad_avg"] = "array"
        return kinds

    def _update_parameter(self, p, g, state: dict, group: dict, xp) -> None:
        alpha, lr = group["alpha"], group["lr"]
        square_avg = state["square_avg"]
        square_avg *= alpha
        square_avg += (1 - alpha) * (g * g)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg += (1 - alpha) * (g - grad_avg)
            avg = xp.sqrt(square_avg - grad_avg * grad_avg)
        else:
            avg = xp.sqrt(square_avg)
        avg += group["eps"]
        if group["momentum"] > 0:
            buffer = state["momentum_buffer"]
            buffer *= group["momentum"]
            buffer += g / avg
            p -= lr * buffer
        else:
            p -= lr * (g / avg)
