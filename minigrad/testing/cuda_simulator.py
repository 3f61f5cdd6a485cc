"""The two pieces of numba.cuda that Numba's CUDA simulator lacks and minigrad's kernel
launch uses on CuPy arrays, so that the launch runs end to end on the CuPy stand-in.

`launch` in minigrad/kernels/cuda/launch.py hands CuPy arrays to Numba with
`cuda.as_cuda_array(array, sync=False)` (a zero-copy view through the CUDA array
interface) and runs the kernel on `cuda.external_stream(pointer)` (CuPy's current
stream). The simulator has no `as_cuda_array` and refuses external streams. `install()`
adds both, built the way Numba builds them: the view reads the producer's
`__cuda_array_interface__` (pointer, shape, strides, type), so kernels write into the
stand-in array's memory; the stream remembers its pointer, so a test can check which
stream a kernel ran on. With MINIGRAD_FAKE_GPU=1 and NUMBA_ENABLE_CUDASIM=1 both set,
the first use of the GPU installs them (minigrad/backend/device.py).

What stays untested without a GPU: Numba's real `as_cuda_array` and `external_stream`,
and the kernels on hardware (benchmarks/gpu_check.sh runs those).
"""
from __future__ import annotations

import numpy as np


class ExternalStream:
    """A simulator stream standing for a foreign CUDA stream (the simulator runs every
    kernel synchronously, so it only records which stream was asked for)."""

    def __init__(self, pointer: int):
        self.handle = pointer

    def synchronize(self) -> None:
        pass


class _InterfaceView:
    """Presents a CUDA array interface to NumPy as the host array interface (the
    stand-in's device pointers are host addresses)."""

    def __init__(self, interface: dict):
        self.__array_interface__ = {
            "shape": tuple(interface["shape"]),
            "typestr": interface["typestr"],
            "strides": interface.get("strides"),
            "data": interface["data"],
            "version": 3,
        }


def as_cuda_array(obj, sync: bool = True):
    """numba.cuda.as_cuda_array in the simulator: a device array viewing obj's memory."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    interface = obj.__cuda_array_interface__
    if interface.get("mask") is not None:
        raise NotImplementedError("masked arrays are not supported")
    return FakeCUDAArray(np.asarray(_InterfaceView(interface)))


def install() -> None:
    """Add `as_cuda_array` and `external_stream` to the simulated numba.cuda."""
    from numba import config, cuda

    if not config.ENABLE_CUDASIM:
        raise RuntimeError("cuda_simulator.install() needs NUMBA_ENABLE_CUDASIM=1")
    cuda.as_cuda_array = as_cuda_array
    cuda.external_stream = ExternalStream
