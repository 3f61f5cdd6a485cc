"""One Adam (or AdamW) update of one parameter, in place: the reference twin in plain `xp`
code and its dispatcher, which runs the fused Numba kernel of kernels/cpu/adam.py where
thresholds.py allows.

The update (PyTorch's), at step t (from 1), with g the gradient:
    g = g + weight_decay * p                 (Adam; AdamW instead: p *= 1 - lr * weight_decay)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g^2        (amsgrad: v_max = max(v_max, v), used below)
    p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
The twin makes about ten passes over the parameter's memory; the kernel makes one.
"""
import math

from minigrad.backend import array_module
from minigrad.kernels.dispatch import cpu_kernels_for
from minigrad.kernels.thresholds import MIN_SIZE


def adam_update(p, g, m, v, v_max, step: int, lr: float, beta1: float, beta2: float,
                eps: float, weight_decay: float, decoupled: bool) -> None:
    """Update p, m, v (and v_max, unless None) in place; g is only read."""
    arrays = [a for a in (p, g, m, v, v_max) if a is not None]
    contiguous = all(a.flags.c_contiguous for a in arrays)
    cpu = cpu_kernels_for("adam", MIN_SIZE["adam"], p.size, *arrays) if contiguous else None
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
