"""Dispatchers for softmax and log-softmax (forward and backward) over the last axis.

Each picks the Numba row kernel (minigrad/kernels/cpu/softmax.py), the Numba CUDA kernel
for CuPy arrays (minigrad/kernels/cuda, when `gpu.eligible`) or the reference twin; see
`numba_eligible` for the rules every CPU dispatcher shares. Thresholds are element counts
measured by benchmarks/bench_kernels.py (see benchmarks/README_kernels.md).
"""

import numpy as np

from minigrad.kernels import cuda as gpu
from minigrad.kernels import reference
from minigrad.kernels.dispatch import PARALLEL_ELEMENTS, forced, numba_eligible, rows_of

# twin/kernel through these dispatchers, load 0.6-1.1 (41 interleaved repeats, float32;
# float64 alike), rows of 10, 16, 20 and 128: forward (softmax, log_softmax) 2.0-2.2x at
# 80 elements, 1.9-2.0x at 256, 2.0-2.3x at 1024, 2.1-3.2x at 16384, so every size; backward
# 1.1-1.4x at 80 but 1.0-1.1x at 256, 1.1-1.3x at 1024, 1.3-1.7x at 4096, 1.9-2.9x at 16384,
# so from 1024 where the margin is clear (it was 0.4-0.9x below 65536 before the backward
# kernels stopped taking a view per row and the output stopped being aligned_empty)
_MIN_ELEMENTS_FORWARD = 1
_MIN_ELEMENTS_BACKWARD = 1024


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
    # a plain np.empty: aligned_empty costs 15 us a call and the kernels gained nothing
    # from it (34 us with either output at (5120, 20) float32)
    out = np.empty(rows[0].shape, rows[0].dtype)
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
