"""Array-level kernels used by the ops, each chosen between a Numba kernel and its
plain-xp reference twin. Ops call only the functions re-exported here.

All functions work on the LAST axis and take/return backend arrays (numpy or cupy).
"""
from minigrad.kernels.reference import (
    log_softmax,
    log_softmax_backward,
    matmul,
    softmax,
    softmax_backward,
)

__all__ = ["softmax", "softmax_backward", "log_softmax", "log_softmax_backward", "matmul"]
