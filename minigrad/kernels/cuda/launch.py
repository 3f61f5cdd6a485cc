"""Launching a Numba CUDA kernel on CuPy arrays (or on NumPy arrays under the simulator)."""
from __future__ import annotations

import numpy as np
from numba import cuda

from minigrad.backend import require_cuda


def launch(kernel, grid, block, *arrays) -> None:
    """Run `kernel[grid, block](*arrays)`.

    CuPy arrays reach Numba as zero-copy views through the CUDA array interface, without
    the device synchronisation Numba does by default for foreign arrays, and the kernel
    runs on CuPy's current stream: it is ordered with the CuPy work before and after it
    and the host never waits. NumPy arrays are accepted only by the Numba CUDA simulator
    (NUMBA_ENABLE_CUDASIM=1), which is how the kernels are tested without a GPU; the
    hand-off itself runs there on the CuPy stand-in (minigrad/testing/cuda_simulator.py).
    """
    if isinstance(arrays[0], np.ndarray):
        kernel[grid, block](*arrays)
        return
    views = [cuda.as_cuda_array(a, sync=False) for a in arrays]
    kernel[grid, block, current_stream()](*views)


def current_stream():
    """CuPy's current stream as a Numba stream."""
    pointer = require_cuda().cuda.get_current_stream().ptr
    # pointer 0 is CuPy's null stream, which is also Numba's default stream
    return cuda.external_stream(pointer) if pointer else cuda.default_stream()
