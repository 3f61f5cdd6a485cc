"""Dispatchers for softmax and log-softmax (forward and backward) over the last axis.

Each picks the Numba row kernel (minigrad/kernels/cpu/softmax.py) or the reference twin;
see `numba_eligible` for the rules every dispatcher shares. Thresholds are element counts
measured by benchmarks/bench_kernels.py (see benchmarks/README_kernels.md).
"""

from minigrad.kernels import reference
from minigrad.kernels.dispatch import (
    PARALLEL_ELEMENTS,
    aligned_empty,
    forced,
    numba_eligible,
    rows_of,
)

# measured at load 1-2 (see benchmarks/README_kernels.md): the forward kernels tie the twin
# at 1024 elements, win 1.1x at 4096 and 1.4-1.7x from 16384; the backward kernels lose
# up to 2x below 16384 (the twin is only two array passes), softmax_backward still loses
# at 32768 (0.9x, float32) and both win 1.2-2.7x from 65536
_MIN_ELEMENTS_FORWARD = 16384
_MIN_ELEMENTS_BACKWARD = 65536


def _use_kernel(min_elements: int, *arrays) -> bool:
    x = arrays[0]
    if x.ndim == 0 or x.size == 0 or not numba_eligible(*arrays):
        # GPU kernels go here (CuPy arrays); today they take the twin
        return False
    return forced() or x.size >= min_elements


def _run_rows(kernel, *arrays):
    rows = [rows_of(a) for a in arrays]
    out = aligned_empty(rows[0].shape, rows[0].dtype)
    kernel(*rows, out, rows[0].size >= PARALLEL_ELEMENTS)
    return out.reshape(arrays[0].shape)


def softmax(x):
    """y = exp(x - max) / sum(exp(x - max)) over the last axis; an all -inf row gives 0."""
    if not _use_kernel(_MIN_ELEMENTS_FORWARD, x):
        return reference.softmax(x)
    from minigrad.kernels.cpu import softmax as cpu

    return _run_rows(cpu.softmax, x)


def softmax_backward(y, g):
    """dx = y * (g - sum(g * y, -1)), given the softmax output y and upstream gradient g."""
    if not _use_kernel(_MIN_ELEMENTS_BACKWARD, y, g) or y.shape != g.shape:
        return reference.softmax_backward(y, g)
    from minigrad.kernels.cpu import softmax as cpu

    return _run_rows(cpu.softmax_backward, y, g)


def log_softmax(x):
    """z = x - max - log(sum(exp(x - max))) over the last axis; an all -inf row gives -inf."""
    if not _use_kernel(_MIN_ELEMENTS_FORWARD, x):
        return reference.log_softmax(x)
    from minigrad.kernels.cpu import softmax as cpu

    return _run_rows(cpu.log_softmax, x)


def log_softmax_backward(z, g):
    """dx = g - exp(z) * sum(g, -1), given the log-softmax output z and upstream gradient g."""
    if not _use_kernel(_MIN_ELEMENTS_BACKWARD, z, g) or z.shape != g.shape:
        return reference.log_softmax_backward(z, g)
    from minigrad.kernels.cpu import softmax as cpu

    return _run_rows(cpu.log_softmax_backward, z, g)
