"""Adam and AdamW (decoupled weight decay), with PyTorch's bias correction."""
from __future__ import annotations

from minigrad import kernels
from minigrad.optim.optimizer import Optimizer


class Adam(Optimizer):
    """PyTorch's rule, per parameter p with gradient g at step t (from 1):
        g = g + weight_decay * p                   (Adam; AdamW instead: p *= 1 - lr * wd)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g^2          (amsgrad: v_max = max(v_max, v))
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    computed by kernels.adam_update_many (one fused pass over each parameter, one kernel
    call for the whole group, where it can)."""

    decoupled_weight_decay = False

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False) -> None:
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"{type(self).__name__}: invalid lr={lr}, eps={eps} or "
                             f"weight_decay={weight_decay}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"{type(self).__name__}: betas must be in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad))

    def _state_kinds(self, group: dict) -> dict[str, str]:
        kinds = {"step": "count", "exp_avg": "array", "exp_avg_sq": "array"}
        if group["amsgrad"]:
            kinds["max_exp_avg_sq"] = "array"
        return kinds

    def _update(self, group: dict) -> None:
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        arrays: list[list] = [[], [], [], [], []]  # p, g, m, v, v_max of each parameter
        steps = []
        for param in group["params"]:
            if param.grad is None:
                continue
            state = self.state.get(param)
            if state is None:
                state = self.state[param] = _initial_state(param.array, param.xp,
                                                           group["amsgrad"])
            state["step"] += 1
            steps.append(state["step"])
            for into, array in zip(arrays, (param.array, param.grad.array, state["exp_avg"],
                                            state["exp_avg_sq"], state.get("max_exp_avg_sq")),
                                   strict=True):
                into.append(array)
            param._version[0] += 1
        kernels.adam_update_many(*arrays[:4], arrays[4] if group["amsgrad"] else None, steps,
                                 lr, beta1, beta2, eps, weight_decay,
                                 self.decoupled_weight_decay)


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay before the Adam step
    (default weight_decay 1e-2, as in PyTorch)."""

    decoupled_weight_decay = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)


def _initial_state(p, xp, amsgrad: bool) -> dict:
    state = {"step": 0, "exp_avg": xp.zeros_like(p), "exp_avg_sq": xp.zeros_like(p)}
    if amsgrad:
        state["max_exp_avg_sq"] = xp.zeros_like(p)
    return state
