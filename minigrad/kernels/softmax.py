"""Dispatchers for softmax and log-softmax (forward and backward) over the last axis.

Each picks the Numba row kernel (minigrad/kernels/cpu/softmax.py) or the reference twin;
see `numba_eligible` for the rules every dispatcher shares. Thresholds are element counts
measured by benchmarks/bench_kernels.py (see benchmarks/README_kernels.md).
"""

from minigrad.kernels import reference
from minigrad.kernels.dispatch import aligned_empty, forced, numba_eligible, rows_of

# the serial kernel beat the twin at every measured size, down to a few hundred elements
# where both cost a few microseconds of call overhead
_MIN_ELEMENTS = 256
# a 2-thread parallel region only paid on the largest shapes, and not at all while
# another process kept a core busy; set so that the (64, 128, 1000) shape runs in parallel
_PARALLEL_ELEMENTS = 1 << 22


def _use_kernel(*arrays) -> bool:
    x = arrays[0]
    if x.ndim == 0 or x.size == 0 or not numba_eligible(*arrays):
        # GPU kernels go here (CuPy arrays); today they take the twin
        return False
    return forced() or x.size >= _MIN_ELEMENTS


def _run_rows(kernel, *arrays):
    rows = [rows_of(a) for a in arrays]
    out = aligned_empty(rows[0].shape, rows[0].dtype)
    kernel(*rows, out, rows[0].size >= _PARALLEL_ELEMENTS)
    return out.reshape(arrays[0].shape)


def softmax(x):
    """y = exp(x - max) / sum(exp(x - max)) over the last axis; an all -inf row gives 0."""
    if not _use_kernel(x):
        return reference.softmax(x)
    from minigrad.kernels.cpu import softmax as cpu

    return _run_rows(cpu.softmax, x)


def softmax_backward(y, g):
    """dx = y * (g - sum(g * y, -1)), given the softmax output y and upstream gradient g."""
    if not _use_kernel(y, g) or y.shape != g.shape:
        return reference.softmax_backward(y, g)
    from minigrad.kernels.cpu import softmax as cpu

    return _run_rows(cpu.softmax_backward, y, g)


def log_softmax(x):
    """z = x - max - log(sum(exp(x - max))) over the last axis; an all -inf row gives -inf."""
    if not _use_kernel(x):
        return reference.log_softmax(x)
    from minigrad.kernels.cpu import softmax as cpu

    return _run_rows(cpu.log_softmax, x)


def log_softmax_backward(z, g):
    """dx = g - exp(z) * sum(g, -1), given the log-softmax output z and upstream gradient g."""
    if not _use_kernel(z, g) or z.shape != g.shape:
        return reference.log_softmax_backward(z, g)
    from minigrad.kernels.cpu import softmax as cpu

    return _run_rows(cpu.log_softmax_backward, z, g)
