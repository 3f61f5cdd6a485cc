"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""
from __future__ import annotations

from minigrad.optim.optimizer import Optimizer


class SGD(Optimizer):
    """PyTorch's rule, per parameter p with gradient g:
        g = g + weight_decay * p
        b = g (first step),  b = momentum * b + (1 - dampening) * g (later steps)
        g = g + momentum * b (nesterov)  or  g = b
        p = p - lr * g"""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: invalid lr={lr}, momentum={momentum} or "
                             f"weight_decay={weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def _state_kinds(self, group: dict) -> dict[str, str]:
        return {"momentum_buffer": "array"}

    def _update(self, group: dict) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        for param in group["params"]:
            if param.grad is None:
                continue
            p, g = param.array, param.grad.array
            if weight_decay:
                g = g + weight_decay * p
            if momentum:
                state = self.state.setdefault(param, {})
                buffer = state.get("momentum_buffer")
                if buffer is None:
                    buffer = state["momentum_buffer"] = g.copy()
                else:
                    buffer *= momentum
                    buffer += (1 - dampening) * g
                g = g + momentum * buffer if nesterov else buffer
            p -= lr * g
            param._version[0] += 1
