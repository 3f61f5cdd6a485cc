"""One Adam (or AdamW) update of one parameter, in place: the reference twin in plain `xp`
code and its dispatcher, which runs the fused Numba kernel of kernels/cpu/adam.py where
thresholds.py allows.

The update (PyTorch's), at step t (from 1), with g the gradient:
    g = g + weight_decay * p                 (Adam; AdamW instead: p *= 1 - lr * weight_decay)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g^2        (amsgrad: v_max = max(v_max, v), used below)
    p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
The twin makes about ten passes over the parameter's memory; the kernel makes one.
`adam_update_many` updates a whole parameter group with one kernel call where it can.
"""
import math

import numpy as np

from minigrad.backend import array_module
from minigrad.kernels.dispatch import cpu_kernels, cpu_kernels_for
from minigrad.kernels.thresholds import MIN_SIZE


def adam_update(p, g, m, v, v_max, step: int, lr: float, beta1: float, beta2: float,
                eps: float, weight_decay: float, decoupled: bool) -> None:
    """Update p, m, v (and v_max, unless None) in place; g is only read."""
    cpu = _kernels_taking(p, g, m, v, v_max)
    if cpu is None:
        adam_update_twin(p, g, m, v, v_max, step, lr, beta1, beta2, eps, weight_decay,
                         decoupled)
        return
    dtype = p.dtype.type
    flat = [a.reshape(-1) for a in (p, g, m, v, m if v_max is None else v_max)]
    cpu.adam_update(*flat, v_max is not None, dtype(lr / (1 - beta1**step)),
                    dtype(math.sqrt(1 - beta2**step)), dtype(beta1), dtype(beta2),
                    dtype(1 - beta1), dtype(1 - beta2), dtype(eps), dtype(weight_decay),
                    decoupled, dtype(lr))


def adam_update_many(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list,
                     max_exp_avg_sqs: list | None, steps: list, lr: float, beta1: float,
                     beta2: float, eps: float, weight_decay: float, decoupled: bool) -> None:
    """adam_update on each parameter k (params[k], grads[k], ..., at step steps[k]): the
    parameters the kernel takes (C-contiguous float arrays on the CPU, all of a dtype)
    with one call per dtype, the others one by one. The same arithmetic either way."""
    batches: dict = {}  # dtype -> [indices]
    for k, p in enumerate(params):
        v_max = None if max_exp_avg_sqs is None else max_exp_avg_sqs[k]
        if _kernels_taking(p, grads[k], exp_avgs[k], exp_avg_sqs[k], v_max) is not None:
            batches.setdefault(p.dtype, []).append(k)
        else:
            adam_update_twin(p, grads[k], exp_avgs[k], exp_avg_sqs[k], v_max, steps[k], lr,
                             beta1, beta2, eps, weight_decay, decoupled)
    for dtype, indices in batches.items():
        _update_batch(indices, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps,
                      dtype.type, lr, beta1, beta2, eps, weight_decay, decoupled)


def _kernels_taking(p, g, m, v, v_max):
    """kernels/cpu/adam.py when its kernel should take these arrays (C-contiguous floats
    of one dtype on the CPU; kernels.mode), else None."""
    arrays = [a for a in (p, g, m, v, v_max) if a is not None]
    if not all(a.flags.c_contiguous for a in arrays):
        return None
    return cpu_kernels_for("adam", MIN_SIZE["adam"], p.size, *arrays)


def _update_batch(indices, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps,
                  dtype, lr, beta1, beta2, eps, weight_decay, decoupled) -> None:
    flat = [tuple(arrays[k].reshape(-1) for k in indices)
            for arrays in (params, grads, exp_avgs, exp_avg_sqs)]
    v_maxes = flat[2] if max_exp_avg_sqs is None else tuple(
        max_exp_avg_sqs[k].reshape(-1) for k in indices)
    step_sizes = np.array([lr / (1 - beta1**steps[k]) for k in indices], dtype)
    bias2_sqrts = np.array([math.sqrt(1 - beta2**steps[k]) for k in indices], dtype)
    cpu_kernels("adam").adam_update_many(
        *flat, v_maxes, max_exp_avg_sqs is not None, step_sizes, bias2_sqrts, dtype(beta1),
        dtype(beta2), dtype(1 - beta1), dtype(1 - beta2), dtype(eps), dtype(weight_decay),
        decoupled, dtype(lr))


def adam_update_twin(p, g, m, v, v_max, step: int, lr: float, beta1: float, beta2: float,
                     eps: float, weight_decay: float, decoupled: bool) -> None:
    """The update of the module docstring, in NumPy/CuPy operations."""
    xp = array_module(p)
    if weight_decay and decoupled:
        p *= 1 - lr * weight_decay
    elif weight_decay:
        g = g + weight_decay * p
    scratch = xp.multiply(g, 1 - beta1)
    m *= beta1
    m += scratch
    xp.multiply(g, g, out=scratch)
    scratch *= 1 - beta2
    v *= beta2
    v += scratch
    if v_max is not None:
        v = xp.maximum(v_max, v, out=v_max)
    # scratch = sqrt(v) / sqrt(1 - beta2^t) + eps, then the step m / scratch
    xp.sqrt(v, out=scratch)
    scratch /= math.sqrt(1 - beta2**step)
    scratch += eps
    xp.divide(m, scratch, out=scratch)
    scratch *= lr / (1 - beta1**step)
    p -= scratch
