"""DLPack: tensors shared without a copy with NumPy, PyTorch, CuPy, JAX and any other
library that speaks the protocol (PyTorch's names).

    t = mg.from_dlpack(torch_tensor)      # a minigrad tensor on the same memory
    u = torch.from_dlpack(t)              # and back: Tensor.__dlpack__, __dlpack_device__

Memory is shared both ways: a write through one library is seen by the other. Autograd
does not cross: the imported tensor is a leaf without history, and a tensor that
requires grad cannot be exported (detach it first), as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from minigrad import dtypes
from minigrad.backend import require_cuda
from minigrad.tensor import Tensor, constant

# DLPack device types (dlpack.h): host memory and CUDA memory (plain and managed)
KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_MANAGED = 13


def from_dlpack(obj) -> Tensor:
    """A tensor sharing memory with `obj`, any object with `__dlpack__` and
    `__dlpack_device__`: host memory becomes a "cpu" tensor, CUDA memory a "cuda" one.

    Raises TypeError for an object that is not a DLPack producer, a device minigrad has no
    backend for, or a dtype minigrad lacks (convert it first: sharing memory means no
    implicit conversion); the importer's own refusal (a dtype NumPy lacks, a tensor that
    requires grad) is re-raised with "from_dlpack" in front."""
    if not hasattr(obj, "__dlpack__") or not hasattr(obj, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ and "
                        f"__dlpack_device__ (a NumPy array, a PyTorch, CuPy or JAX tensor), "
                        f"got {type(obj).__name__}")
    device_type, device_id = obj.__dlpack_device__()
    if device_type == KDL_CPU:
        array_module = np
    elif device_type in (KDL_CUDA, KDL_CUDA_MANAGED):
        if device_id != 0:
            raise TypeError(f"from_dlpack: the tensor is on CUDA device {device_id}; "
                            "minigrad uses device 0")
        array_module = require_cuda()
    else:
        raise TypeError(f"from_dlpack: DLPack device type {device_type} is neither host "
                        f"memory ({KDL_CPU}) nor CUDA memory ({KDL_CUDA})")
    try:
        array = array_module.from_dlpack(obj)
    except (RuntimeError, BufferError) as exc:  # a dtype NumPy lacks (bfloat16), ...
        raise type(exc)(f"from_dlpack: cannot import the tensor: {exc} (minigrad has "
                        f"{_SHARED_NAMES} tensors)") from exc
    if array.dtype not in _SHARED_DTYPES:
        raise TypeError(f"from_dlpack: minigrad has no {array.dtype} tensors (it has "
                        f"{_SHARED_NAMES}); convert the source tensor first")
    return constant(array)


_SHARED_DTYPES = frozenset(d.np for d in dtypes.ALL)
_SHARED_NAMES = ", ".join(sorted(str(d) for d in _SHARED_DTYPES))
