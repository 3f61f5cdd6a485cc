"""Dispatchers for softmax and log-softmax (forward and backward) over the last axis.

Each picks the Numba row kernel (minigrad/kernels/cpu/softmax.py), the Numba CUDA kernel
for CuPy arrays (minigrad/kernels/cuda, when `gpu.eligible`) or the reference twin; see
`numba_eligible` for the rules every CPU dispatcher shares. Thresholds are element counts
measured by benchmarks/bench_kernels.py (see benchmarks/README_kernels.md).
"""

from minigrad.kernels import cuda as gpu
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


def _dispatch(name: str, min_elements: int, *arrays):
    """Run the kernel `name` on the arrays' rows: GPU kernel, CPU kernel or the twin."""
    first = arrays[0]
    same_shapes = all(a.shape == first.shape for a in arrays[1:])
    if first.ndim and same_shapes and gpu.eligible(*arrays):
        return getattr(gpu, name)(*arrays)
    if not same_shapes or not _use_cpu_kernel(min_elements, *arrays):
        return getattr(reference, name)(*arrays)
    from minigrad.kernels.cpu import softmax as cpu

    rows = [rows_of(a) for a in arrays]
    out = aligned_empty(rows[0].shape, rows[0].dtype)
    getattr(cpu, name)(*rows, out, rows[0].size >= PARALLEL_ELEMENTS)
    return out.reshape(first.shape)


def _use_cpu_kernel(min_elements: int, *arrays) -> bool:
    x = arrays[0]
    if x.ndim == 0 or x.size == 0 or not numba_eligible(*arrays):
        return False
    return forced() or x.size >= min_elements


def softmax(x):
    """y = exp(x - max) / sum(exp(x - max)) over the last axis; an all -inf row gives 0."""
    return _dispatch("softmax", _MIN_ELEMENTS_FORWARD, x)


def softmax_backward(y, g):
    """dx = y * (g - sum(g * y, -1)), given the softmax output y and upstream gradient g."""
    return _dispatch("softmax_backward", _MIN_ELEMENTS_BACKWARD, y, g)


def log_softmax(x):
    """z = x - max - log(sum(exp(x - max))) over the last axis; an all -inf row gives -inf."""
    return _dispatch("log_softmax", _MIN_ELEMENTS_FORWARD, x)


def log_softmax_backward(z, g):
    """dx = g - exp(z) * sum(g, -1), given the log-softmax output z and upstream gradient g."""
    return _dispatch("log_softmax_backward", _MIN_ELEMENTS_BACKWARD, z, g)
