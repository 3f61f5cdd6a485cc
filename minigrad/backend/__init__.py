"""Devices and their array modules: "cpu" runs on NumPy, "gpu" (alias "cuda", "cuda:0")
on CuPy. Everything device-specific in minigrad goes through this package."""
from minigrad.backend.device import (
    Device,
    array_module,
    as_device,
    cupy_or_none,
    device_of,
    is_cuda_available,
    to_device,
)

__all__ = [
    "Device",
    "array_module",
    "as_device",
    "cupy_or_none",
    "device_of",
    "is_cuda_available",
    "to_device",
]
