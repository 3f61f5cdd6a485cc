"""The fused Adam update: one pass over a parameter, its gradient and its two (or three,
with amsgrad) moment arrays, all flat and C-contiguous, updated in place.

Performance rule: memory-bound. The twin's ten NumPy passes read and write the arrays
again and again; here every element is loaded once and stored once, and the loop
vectorises (no branch depends on the element, only on the flags).
"""
import numpy as np

from minigrad.kernels.cpu.jit import kernel

_FASTMATH = {"reassoc", "contract"}


@kernel(fastmath=_FASTMATH)
def adam_update(p, g, m, v, v_max, amsgrad, step_size, bias2_sqrt, beta1, beta2,
                one_minus_beta1, one_minus_beta2, eps, weight_decay, decoupled, lr):
    """p -= step_size * m / (sqrt(v) / bias2_sqrt + eps) after the moment updates, with
    step_size = lr / (1 - beta1^t) and bias2_sqrt = sqrt(1 - beta2^t); see kernels/adam.py.
    `v_max` is only read and written when `amsgrad`."""
    one = p.dtype.type(1)
    decay = one - lr * weight_decay if decoupled else one
    coupled = p.dtype.type(0) if decoupled else weight_decay
    for i in range(p.size):
        grad = g[i] + coupled * p[i]
        moment = beta1 * m[i] + one_minus_beta1 * grad
        second = beta2 * v[i] + one_minus_beta2 * (grad * grad)
        m[i] = moment
        v[i] = second
        if amsgrad:
            second = max(v_max[i], second)
            v_max[i] = second
        p[i] = p[i] * decay - step_size * moment / (np.sqrt(second) / bias2_sqrt + eps)


@kernel(fastmath=_FASTMATH)
def adam_update_many(ps, gs, ms, vs, v_maxes, amsgrad, step_sizes, bias2_sqrts, beta1, beta2,
                     one_minus_beta1, one_minus_beta2, eps, weight_decay, decoupled, lr):
    """adam_update on every parameter of tuples of flat arrays, in one call (a call from
    Python costs more than a small parameter's update). Each parameter counts its own
    steps: step_sizes[k] and bias2_sqrts[k] are parameter k's."""
    for k in range(len(ps)):
        adam_update(ps[k], gs[k], ms[k], vs[k], v_maxes[k], amsgrad, step_sizes[k],
                    bias2_sqrts[k], beta1, beta2, one_minus_beta1, one_minus_beta2, eps,
                    weight_decay, decoupled, lr)
