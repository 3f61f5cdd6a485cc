"""Devices and their array modules: "cpu" runs on NumPy, "cuda" (cuda:0, alias "gpu") on
CuPy. Everything device-specific in minigrad goes through this package; `cuda` is the
`mg.cuda` namespace."""
from minigrad.backend import cuda
from minigrad.backend.device import (
    Device,
    array_module,
    as_device,
    cuda_unavailable_reason,
    cupy_or_none,
    cupyx_special,
    device_of,
    fake_gpu_requested,
    is_cuda_available,
    require_cuda,
    to_device,
)

__all__ = [
    "Device",
    "array_module",
    "as_device",
    "cuda",
    "cuda_unavailable_reason",
    "cupy_or_none",
    "cupyx_special",
    "device_of",
    "fake_gpu_requested",
    "is_cuda_available",
    "require_cuda",
    "to_device",
]
