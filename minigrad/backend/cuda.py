"""`mg.cuda`: whether a GPU is usable, and waiting for it (PyTorch's `torch.cuda` names),
and the GPU tensor types mg.cuda.FloatTensor, mg.cuda.LongTensor, ... (tensor_types.py).

Nothing here imports CuPy until a function is called, so `import minigrad` stays light.
"""
from __future__ import annotations

from minigrad.backend.device import (
    cuda_unavailable_reason,
    cupy_or_none,
    is_cuda_available,
    require_cuda,
)

__all__ = ["device_count", "get_device_name", "is_available", "is_bf16_supported",
           "manual_seed", "manual_seed_all", "synchronize", "unavailable_reason"]

is_available = is_cuda_available
unavailable_reason = cuda_unavailable_reason


def device_count() -> int:
    """How many CUDA GPUs CuPy sees (0 without CuPy or a driver); minigrad uses the first."""
    cupy = cupy_or_none()
    return 0 if cupy is None else cupy.cuda.runtime.getDeviceCount()


def synchronize() -> None:
    """Wait until all queued GPU work on every stream has finished (GPU calls return
    before the work runs: time GPU code only after this)."""
    require_cuda().cuda.Device().synchronize()


def get_device_name() -> str:
    """The name of the GPU minigrad uses, e.g. 'NVIDIA H200'."""
    cupy = require_cuda()
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def manual_seed(seed: int) -> None:
    """Seed the GPU's random generator (mg.manual_seed seeds the CPU's too). Without CUDA
    there is nothing to seed and nothing happens, as in PyTorch."""
    # minigrad.random imports the backend package: importing it at the top of this module,
    # which the package imports, would be a cycle
    from minigrad import random

    random.manual_seed_gpu(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every GPU's generator; minigrad uses one GPU, so this is manual_seed."""
    manual_seed(seed)


def is_bf16_supported() -> bool:
    """False: minigrad has no bfloat16 (NumPy and CuPy lack it); scripts that check this
    fall back to float16 or float32, which minigrad has."""
    return False


def __getattr__(name: str):
    # the tensor types are made with Tensor, which imports this package, and mg.cuda.amp
    # with minigrad.amp, which imports it too: importing them at the top of this module
    # would be a cycle, so they are looked up when first asked for
    from minigrad.amp.device_amp import cuda_amp
    from minigrad.tensor_types import CUDA_TYPES

    if name == "amp":
        return cuda_amp
    if name in CUDA_TYPES:
        return CUDA_TYPES[name]
    raise AttributeError(f"module 'minigrad.cuda' has no attribute {name!r}", name=name)
