"""cupy.cuda.runtime in the stand-in: the queries minigrad makes, for one device, and the
stream capture queries and constants (cudaStreamIsCapturing, cudaStreamCaptureMode)."""
from __future__ import annotations

from minigrad.testing.fake_cupy._errors import CUDARuntimeError

DEVICE_NAME = "minigrad CuPy stand-in (NumPy on the host, no GPU)"
is_hip = False
streamLegacy = 1  # noqa: N816  (CUDA's names)
streamPerThread = 2  # noqa: N816
streamCaptureModeGlobal = 0  # noqa: N816
streamCaptureModeThreadLocal = 1  # noqa: N816
streamCaptureModeRelaxed = 2  # noqa: N816
_CAPTURE_UNSUPPORTED = ("cudaErrorStreamCaptureUnsupported: operation not permitted when "
                       "stream is capturing")


def getDeviceCount() -> int:  # noqa: N802
    return 1


def getDevice() -> int:  # noqa: N802
    return 0


def setDevice(device: int) -> None:  # noqa: N802
    check_device(device)


def getDeviceProperties(device: int) -> dict:  # noqa: N802
    """The fields of cudaDeviceProp that minigrad reads (the name is bytes, as in CuPy)."""
    check_device(device)
    return {"name": DEVICE_NAME.encode(), "major": 0, "minor": 0, "totalGlobalMem": 0,
            "multiProcessorCount": 0}


def runtimeGetVersion() -> int:  # noqa: N802
    return 0


def driverGetVersion() -> int:  # noqa: N802
    return 0


def deviceSynchronize() -> None:  # noqa: N802
    """Work in the stand-in runs when it is issued: nothing to wait for. CUDA forbids it
    while a stream captures: the captures are invalidated and it raises."""
    from minigrad.testing.fake_cupy import _capture  # the stand-in's modules import one another

    _capture.invalidate(list(_capture.captures), _CAPTURE_UNSUPPORTED)


def streamIsCapturing(stream: int) -> bool:  # noqa: N802
    """Whether the stream with pointer `stream` is capturing; RuntimeError once an error
    has invalidated its capture (CuPy's)."""
    from minigrad.testing.fake_cupy import _capture  # the stand-in's modules import one another

    capture = _capture.captures.get(stream)
    if capture is not None and capture.error is not None:
        raise RuntimeError("the stream was capturing, but an error has invalidated the "
                           "capture sequence")
    return capture is not None


def check_device(device: int) -> None:
    if device != 0:
        raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
