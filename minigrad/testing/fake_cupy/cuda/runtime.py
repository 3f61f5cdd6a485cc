"""cupy.cuda.runtime in the stand-in: the queries minigrad makes, for one device."""
from __future__ import annotations

DEVICE_NAME = "minigrad CuPy stand-in (NumPy on the host, no GPU)"
is_hip = False
streamLegacy = 1  # noqa: N816  (CUDA's names)
streamPerThread = 2  # noqa: N816


class CUDARuntimeError(RuntimeError):
    """What CUDA runtime calls raise (here: an invalid device ordinal)."""


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
    """Work in the stand-in runs when it is issued: nothing to wait for."""


def check_device(device: int) -> None:
    if device != 0:
        raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
