"""The pieces of numba.cuda that Numba's CUDA simulator lacks and minigrad's kernel
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

A kernel launched on a stand-in stream that is capturing (`kernel[grid, block,
external_stream(pointer)]`) is recorded into the capture, as the stand-in's own kernels
are (fake_cupy/_capture.py), instead of running: `install()` makes the simulator's
`kernel[config]` hand such launches to the capture; every other launch is Numba's own.

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
    """numba.cuda.as_cuda_array in the simulator: a device array viewing obj's memory
    (`source` is obj, which a captured launch keeps alive)."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    interface = obj.__cuda_array_interface__
    if interface.get("mask") is not None:
        raise NotImplementedError("masked arrays are not supported")
    view = FakeCUDAArray(np.asarray(_InterfaceView(interface)))
    view.source = obj
    return view


class _CapturedLaunch:
    """`kernel[config]` on a capturing stand-in stream: calling it records the launch."""

    def __init__(self, kernel, configuration: tuple, pointer: int):
        self.kernel = kernel
        self.configuration = (*configuration[:2], 0, *configuration[3:])  # run on stream 0
        self.pointer = pointer

    def __call__(self, *args) -> None:
        from minigrad.testing.fake_cupy import _capture  # only with the stand-in

        def run():
            self.kernel[self.configuration](*args)

        _capture.record_call(self.pointer, run,
                             [getattr(a, "source", None) for a in args])


def _configure(kernel, configuration):
    """The simulator's `kernel[config]`, or a _CapturedLaunch on a capturing stream."""
    from minigrad.testing.fake_cupy import _capture  # only with the stand-in

    configured = _simulator_configure(kernel, configuration)
    pointer = getattr(configuration[2], "handle", None) if len(configuration) > 2 else None
    if pointer in _capture.captures:
        return _CapturedLaunch(kernel, tuple(configuration), pointer)
    return configured


_simulator_configure = None  # FakeCUDAKernel.__getitem__, once install() replaced it


def install() -> None:
    """Add `as_cuda_array` and `external_stream` to the simulated numba.cuda, and route
    its launches on capturing streams to the capture."""
    global _simulator_configure
    from numba import config, cuda

    if not config.ENABLE_CUDASIM:
        raise RuntimeError("cuda_simulator.install() needs NUMBA_ENABLE_CUDASIM=1")
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    cuda.as_cuda_array = as_cuda_array
    cuda.external_stream = ExternalStream
    if _simulator_configure is None:
        _simulator_configure = FakeCUDAKernel.__getitem__
        FakeCUDAKernel.__getitem__ = _configure
