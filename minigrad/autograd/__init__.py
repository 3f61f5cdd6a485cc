"""Reverse-mode automatic differentiation.

    grad_mode.py   whether ops record a graph (per thread): no_grad, enable_grad, ...
    function.py    Function: an op's forward and backward, and its node in the graph
    engine.py      the backward walk: backward() and grad()
    gradcheck.py   finite-difference checks of backward rules

Read them in that order; docs/walkthrough.md follows `loss.backward()` through them.
"""
from minigrad.autograd.engine import backward, grad
from minigrad.autograd.function import Function
from minigrad.autograd.grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from minigrad.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = [
    "Function",
    "GradcheckError",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
]
