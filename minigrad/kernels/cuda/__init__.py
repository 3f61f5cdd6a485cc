"""GPU kernels: softmax and log-softmax (forward and backward) and matmul, written with
numba.cuda and launched on CuPy arrays through the CUDA array interface. Each computes
exactly what its twin in minigrad/kernels/<name>.py computes (over the LAST axis).

    softmax(x) -> y                   y = exp(x - max) / sum(exp(x - max)); all -inf row -> 0
    softmax_backward(y, g) -> dx      dx = y * (g - sum(g * y, -1))
    log_softmax(x) -> z               z = x - max - log(sum(exp(x - max))); all -inf row -> -inf
    log_softmax_backward(z, g) -> dx  dx = g - exp(z) * sum(g, -1)
    matmul(a, b) -> a @ b             NumPy's rules: 2-D, batched with broadcasting, 1-D

Dispatch (the dispatchers in minigrad/kernels call these): `eligible(*arrays)` is True
in MINIGRAD_KERNELS=numba mode for CuPy float32/float64 arrays of one dtype. In "auto"
mode CuPy arrays keep the twins, and matmul keeps cuBLAS (cupy.matmul), until a GPU
benchmark (benchmarks/gpu_check.sh) shows a kernel faster.

Importing this package imports neither Numba nor CuPy; the kernels compile on first use.
Under NUMBA_ENABLE_CUDASIM=1 they also accept NumPy arrays and run in Numba's CUDA
simulator, which is how tests/test_cuda_kernels_sim.py checks them without a GPU.
"""
from __future__ import annotations

import numpy as np

from minigrad.kernels.dispatch import KERNEL_DTYPES
from minigrad.kernels.mode import get_mode


def eligible(*arrays) -> bool:
    """True when the GPU kernels should take these arrays: mode "numba", and every array
    a CuPy (not NumPy) array of one dtype the kernels are compiled for."""
    if get_mode() != "numba":
        return False
    first = arrays[0]
    if isinstance(first, np.ndarray) or not hasattr(first, "__cuda_array_interface__"):
        return False
    if first.dtype not in KERNEL_DTYPES:
        return False
    return all(not isinstance(a, np.ndarray) and a.dtype == first.dtype for a in arrays[1:])


def softmax(x):
    """y = exp(x - max) / sum(exp(x - max)) over the last axis; an all -inf row gives 0."""
    return _rows("softmax", x)


def softmax_backward(y, g):
    """dx = y * (g - sum(g * y, -1)), given the softmax output y and upstream gradient g."""
    return _rows("softmax_backward", y, g)


def log_softmax(x):
    """z = x - max - log(sum(exp(x - max))) over the last axis; an all -inf row gives -inf."""
    return _rows("log_softmax", x)


def log_softmax_backward(z, g):
    """dx = g - exp(z) * sum(g, -1), given the log-softmax output z and upstream gradient g."""
    return _rows("log_softmax_backward", z, g)


def matmul(a, b):
    """a @ b with NumPy's rules, by the tiled Numba kernel (cuBLAS is the default path)."""
    from minigrad.kernels.cuda import gemm  # imports numba.cuda: only when a kernel runs

    return gemm.matmul(a, b)


def _rows(name: str, *arrays):
    from minigrad.kernels.cuda import rows  # imports numba.cuda: only when a kernel runs

    if any(a.ndim == 0 or a.shape != arrays[0].shape for a in arrays):
        raise ValueError(f"{name}: expected arrays of one shape with ndim >= 1, got "
                         f"{[a.shape for a in arrays]}")
    return rows.run(name, *arrays)
