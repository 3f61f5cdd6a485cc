"""What Adadelta, Adagrad, RMSprop, Adamax, NAdam and RAdam share: the walk over the
parameters of a group (each update reads only its parameter, gradient and state),
PyTorch's checks of their arguments, with PyTorch's messages, and Adam's running
averages, which NAdam and RAdam keep too."""
from __future__ import annotations

from minigrad.optim.optimizer import Optimizer

# PyTorch's words for a hyperparameter in "Invalid ...: value"; others are "<name> value"
_LABELS = {"lr": "learning rate", "eps": "epsilon value"}


class PerParameterOptimizer(Optimizer):
    """Subclasses give `_state_kinds(group)` (with a "step" count), `_update_parameter(p,
    g, state, group, xp)` (update the array p in place) and, where the state does not
    start at zeros, `_initial_state(p, xp, group)`. `step()` skips parameters without a
    gradient, negates the gradient for `maximize`, counts the step and applies weight
    decay before calling `_update_parameter`:
        g = g + weight_decay * p             (L2 penalty, PyTorch's default)
        p = p * (1 - lr * weight_decay)      (decoupled_weight_decay=True, as AdamW)

    foreach, fused and capturable choose among PyTorch's implementations of one update;
    minigrad has one, so they are accepted and change nothing. differentiable=True (a
    step that autograd can differentiate) is refused."""

    def __init__(self, params, defaults: dict) -> None:
        if defaults.get("differentiable"):
            raise NotImplementedError(f"{type(self).__name__}: differentiable=True is not "
                                      "supported: minigrad's optimizers update parameters "
                                      "outside autograd; pass differentiable=False")
        super().__init__(params, defaults)

    def _update(self, group: dict) -> None:
        lr, weight_decay = group["lr"], group["weight_decay"]
        for param in group["params"]:
            if param.grad is None:
                continue
            p, g = param.array, param.grad.array
            if group["maximize"]:
                g = -g
            state = self.state.get(param)
            if state is None:
                state = self.state[param] = self._initial_state(p, param.xp, group)
            state["step"] += 1
            if weight_decay and group.get("decoupled_weight_decay"):
                p *= 1 - lr * weight_decay
            elif weight_decay:
                g = g + weight_decay * p
            self._update_parameter(p, g, state, group, param.xp)
            param._version[0] += 1

    def _initial_state(self, p, xp, group: dict) -> dict:
        """The state before the first step: 0 for each count of `_state_kinds`, zeros
        like p for each array."""
        return {name: 0 if kind == "count" else xp.zeros_like(p)
                for name, kind in self._state_kinds(group).items()}

    def _update_parameter(self, p, g, state: dict, group: dict, xp) -> None:
        raise NotImplementedError


def check_non_negative(owner: str, **hyperparameters: float) -> None:
    """ValueError for the first hyperparameter that is not >= 0 (NaN included), worded as
    PyTorch's: `check_non_negative("Adagrad", lr=-1)` -> "Adagrad: Invalid learning rate:
    -1"."""
    for name, value in hyperparameters.items():
        if not 0.0 <= value:
            label = _LABELS.get(name, f"{name} value")
            raise ValueError(f"{owner}: Invalid {label}: {value}")


def check_adam_arguments(owner: str, lr: float, eps: float, betas: tuple[float, float],
                         weight_decay: float) -> None:
    """The checks of an Adam variant's arguments, in PyTorch's order (lr, eps, betas,
    weight_decay) and with its messages."""
    check_non_negative(owner, lr=lr, eps=eps)
    check_betas(owner, betas)
    check_non_negative(owner, weight_decay=weight_decay)


def update_moments(exp_avg, exp_avg_sq, g, betas: tuple[float, float]) -> None:
    """Adam's running averages of the gradient and of its square, in place:
        exp_avg = exp_avg + (1 - beta1) * (g - exp_avg)
        exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g^2"""
    beta1, beta2 = betas
    exp_avg += (1 - beta1) * (g - exp_avg)
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * (g * g)


def check_betas(owner: str, betas: tuple[float, float]) -> None:
    """ValueError unless betas is a pair of numbers in [0, 1), worded as PyTorch's."""
    if len(betas) != 2:
        raise ValueError(f"{owner}: betas must be a pair (beta1, beta2), got {betas}")
    for index, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"{owner}: Invalid beta parameter at index {index}: {beta}")
