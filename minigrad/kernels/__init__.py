"""Array-level kernels used by the ops. Ops call only the functions re-exported here, with
backend arrays (NumPy or CuPy); the row kernels work over the LAST axis.

    softmax(x) -> y                   y = exp(x - max) / sum(exp(x - max)); all -inf row -> 0
    softmax_backward(y, g) -> dx      dx = y * (g - sum(g * y, -1))
    log_softmax(x) -> z               z = x - max - log(sum(exp(x - max))); all -inf row -> -inf
    log_softmax_backward(z, g) -> dx  dx = g - exp(z) * sum(g, -1)
    matmul(a, b) -> a @ b             NumPy's rules: 2-D, batched with broadcasting, 1-D
    layer_norm(x, w, b, k, eps) -> (y, mean, rstd)       over the last k dims
    layer_norm_backward(g, x, mean, rstd, w, k) -> (dx, dw, db)
    layer_norm_weight_grad(g, x, mean, rstd, k) -> dw
    cross_entropy(x, valid, target, tw, w, eps) -> (losses, logp)      rows of (M, C)
    cross_entropy_backward(logp, valid, target, tw, w, eps, scale) -> dx
    adam_update(p, g, m, v, v_max, step, lr, beta1, beta2, eps, wd, decoupled)  in place
    adam_update_many(ps, gs, ms, vs, v_maxes, steps, lr, ...)   in place, a group at once
    index_add(shape, index, values) -> out  zeros(shape) with out[index] += values, repeats
                                      summed in an order fixed by the data (segment_sum.py)

Layout: `<name>.py` holds the reference twins in plain `xp` code and the dispatcher;
`cpu/<name>.py` the Numba code; `cuda/` the Numba CUDA kernels; `thresholds.py` the one
table of measured sizes from which auto mode runs a Numba kernel; `dispatch.py` the rules
every dispatcher shares (dtypes, float16 computed in float32, Numba missing).

Switch: MINIGRAD_KERNELS=auto|numpy|numba in the environment, or `set_mode`, `get_mode`
and the context manager `mode` (see mode.py). CuPy arrays take the Numba CUDA kernels of
softmax and matmul in "numba" mode and the twins (cuBLAS for matmul) otherwise. Importing
this package imports no Numba and compiles nothing: a kernels/cpu module is imported on the
first call that needs it, and its kernels compile once per machine (see cpu/jit.py).
"""

from minigrad.kernels.adam import adam_update, adam_update_many
from minigrad.kernels.cross_entropy import cross_entropy, cross_entropy_backward
from minigrad.kernels.layer_norm import layer_norm, layer_norm_backward, layer_norm_weight_grad
from minigrad.kernels.matmul import matmul
from minigrad.kernels.mode import get_mode, mode, set_mode
from minigrad.kernels.segment_sum import index_add
from minigrad.kernels.softmax import (
    log_softmax,
    log_softmax_backward,
    softmax,
    softmax_backward,
)

__all__ = [
    "softmax",
    "softmax_backward",
    "log_softmax",
    "log_softmax_backward",
    "matmul",
    "layer_norm",
    "layer_norm_backward",
    "layer_norm_weight_grad",
    "cross_entropy",
    "cross_entropy_backward",
    "adam_update",
    "adam_update_many",
    "index_add",
    "get_mode",
    "set_mode",
    "mode",
]
