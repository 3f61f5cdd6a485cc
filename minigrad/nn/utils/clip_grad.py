"""Gradient utilities: clip_grad_norm_, clip_grad_value_ and zero_grads (shared by Module
and Optimizer)."""
from __future__ import annotations

import math
from collections.abc import Iterable

from minigrad.backend import array_module
from minigrad.tensor import Tensor, constant


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale all gradients in place by min(1, max_norm / (total_norm + 1e-6)), where
    total_norm is the norm of all gradients together (as if concatenated); returns it."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad.array for p in parameters if p.grad is not None]
    if not grads:
        return Tensor(0.0)
    xp = array_module(grads[0])
    norm_type = float(norm_type)
    if norm_type == math.inf:
        norms = [xp.abs(g).max() for g in grads]
        total = xp.stack(norms).max()
    else:
        norms = [xp.linalg.norm(g.ravel(), norm_type) for g in grads]
        total = xp.linalg.norm(xp.stack(norms), norm_type)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the "
                           f"gradients is {float(total)}; set error_if_nonfinite=False to skip")
    clip_coefficient = min(1.0, float(max_norm) / (float(total) + 1e-6))
    for g in grads:
        g *= g.dtype.type(clip_coefficient)
    return constant(xp.asarray(total))


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value], elementwise (parameters
    without a gradient are skipped). `foreach` is accepted for PyTorch's signature: there
    is one implementation."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    if not clip_value >= 0:
        raise ValueError(f"clip_grad_value_: clip_value must be a number >= 0 (the gradients "
                         f"are clamped to [-clip_value, clip_value]), got {clip_value}")
    for param in parameters:
        if param.grad is not None:
            param.grad.clamp_(min=-clip_value, max=clip_value)


def zero_grads(parameters: Iterable[Tensor], set_to_none: bool = True) -> None:
    """Forget the gradients (`.grad = None`, the default) or set them to zeros."""
    for param in parameters:
        if set_to_none:
            param.grad = None  # without reading it first: a compiled step then frees it here
        elif param.grad is not None:
            param.grad = constant(param.xp.zeros_like(param.grad.array))
