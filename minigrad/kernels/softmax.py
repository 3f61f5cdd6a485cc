"""softmax and log-softmax over the last axis, forward and backward: the reference twins in
plain `xp` code, and their dispatchers.

Each dispatcher runs the Numba row kernel (kernels/cpu/softmax.py) where dispatch.py and
the thresholds allow, the Numba CUDA kernel for CuPy arrays in "numba" mode
(kernels/cuda), and the twin otherwise.
"""
import functools

import numpy as np

from minigrad.backend import array_module
from minigrad.kernels import cuda as gpu
from minigrad.kernels.dispatch import any_half, cpu_kernels_for, in_float32, rows_of
from minigrad.kernels.thresholds import MIN_SIZE

# ----------------------------------------------------------------------------- twins


def softmax_twin(x):
    """y = exp(x - max) / sum(exp(x - max)) over the last axis; an all -inf row gives 0."""
    xp = array_module(x)
    row_max = x.max(axis=-1, keepdims=True)
    # a fully masked row has max -inf; shift by 0 instead so exp gives zeros, not NaN
    row_max = xp.where(xp.isfinite(row_max), row_max, 0)
    e = xp.exp(x - row_max)
    total = e.sum(axis=-1, keepdims=True)
    return e / xp.where(total == 0, 1, total)


def softmax_backward_twin(y, g):
    """dx = y * (g - sum(g * y))"""
    return y * (g - (g * y).sum(axis=-1, keepdims=True))


def log_softmax_twin(x):
    """z = x - max - log(sum(exp(x - max))); an all -inf row gives -inf (so exp(z) = 0)."""
    xp = array_module(x)
    row_max = x.max(axis=-1, keepdims=True)
    row_max = xp.where(xp.isfinite(row_max), row_max, 0)
    shifted = x - row_max
    total = xp.exp(shifted).sum(axis=-1, keepdims=True)
    # a fully masked row has total 0: keep its -inf entries instead of -inf - (-inf) = NaN
    return shifted - xp.log(xp.where(total == 0, 1, total))


def log_softmax_backward_twin(z, g):
    """dx = g - exp(z) * sum(g)"""
    return g - array_module(z).exp(z) * g.sum(axis=-1, keepdims=True)


_TWINS = {"softmax": softmax_twin, "softmax_backward": softmax_backward_twin,
          "log_softmax": log_softmax_twin, "log_softmax_backward": log_softmax_backward_twin}

# ----------------------------------------------------------------------------- dispatch


def softmax(x):
    """y = exp(x - max) / sum(exp(x - max)) over the last axis; an all -inf row gives 0."""
    return _dispatch("softmax", x)


def softmax_backward(y, g):
    """dx = y * (g - sum(g * y, -1)), given the softmax output y and upstream gradient g."""
    return _dispatch("softmax_backward", y, g)


def log_softmax(x):
    """z = x - max - log(sum(exp(x - max))) over the last axis; an all -inf row gives -inf."""
    return _dispatch("log_softmax", x)


def log_softmax_backward(z, g):
    """dx = g - exp(z) * sum(g, -1), given the log-softmax output z and upstream gradient g."""
    return _dispatch("log_softmax_backward", z, g)


def _dispatch(name: str, *arrays):
    """Run `name` over the rows of the arrays (all of one shape): GPU kernel, CPU kernel or
    the twin."""
    first = arrays[0]
    if any_half(*arrays):
        return in_float32(functools.partial(_dispatch, name), *arrays)
    if first.ndim == 0 or any(a.shape != first.shape for a in arrays):
        return _TWINS[name](*arrays)
    if gpu.eligible(*arrays):
        return getattr(gpu, name)(*arrays)
    cpu = cpu_kernels_for("softmax", MIN_SIZE[name], first.size, *arrays)
    if cpu is None:
        return _TWINS[name](*arrays)
    rows = [rows_of(a) for a in arrays]
    # a plain np.empty: aligned_empty costs 15 us a call and the kernels gained nothing
    # from it (34 us with either output at (5120, 20) float32)
    out = np.empty(rows[0].shape, rows[0].dtype)
    getattr(cpu, name)(*rows, out)
    return out.reshape(first.shape)
