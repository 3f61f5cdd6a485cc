"""DLPack in the stand-in: capsules that say "CUDA device 0".

A stand-in array exports its host memory in a DLPack capsule whose device field is set
to kDLCUDA, exactly what CuPy exports. So a CPU-only consumer (NumPy, a CPU build of
PyTorch) refuses it as it would refuse real device memory, while `cupy.from_dlpack`
(the stand-in's) imports it without a copy, flipping the field back to reach the host
memory. As in CuPy, `dl_device=(kDLCPU, 0)` asks for a host copy instead, and
`cupy.from_dlpack` refuses CPU producers.
"""
from __future__ import annotations

import ctypes
import warnings

import numpy as np

from minigrad.testing.fake_cupy._array import adopt, ndarray

KDL_CPU = 1
KDL_CUDA = 2
_SUPPORTED_VERSION = (1, 0)

# offsetof(..., dl_tensor.device.device_type) in DLManagedTensor ("dltensor": the
# DLTensor comes first, after its data pointer) and DLManagedTensorVersioned
# ("dltensor_versioned": version, manager_ctx, deleter and flags come first)
_DEVICE_TYPE_OFFSET = {b"dltensor": 8, b"dltensor_versioned": 40}

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _device_type_field(capsule) -> ctypes.c_int32:
    name = _capsule_name(capsule)
    if name not in _DEVICE_TYPE_OFFSET:
        raise ValueError(f"not an unconsumed DLPack capsule (name {name!r})")
    return ctypes.c_int32.from_address(_capsule_pointer(capsule, name)
                                       + _DEVICE_TYPE_OFFSET[name])


def export(array: ndarray, stream, max_version, dl_device, copy):
    """ndarray.__dlpack__ with CuPy's rules for the device, the copy and the stream."""
    if dl_device is not None and tuple(dl_device) == (KDL_CPU, 0):
        if copy is False:
            raise ValueError("GPU memory cannot be exported to CPU without copy.")
        return array.get().__dlpack__(max_version=max_version)
    if dl_device is not None and tuple(dl_device) != (KDL_CUDA, 0):
        raise BufferError("unsupported device requested.")
    if copy is True:
        raise BufferError("copy=True only supported for copy to CPU.")
    if stream is not None and not isinstance(stream, int):
        raise TypeError(f"stream must be an int, got {type(stream)}")
    if isinstance(stream, int) and stream < -1:
        raise ValueError(f"On CUDA, the valid stream for the DLPack protocol is -1, 1, 2, "
                         f"or any larger value, but {stream} was provided")
    if stream == 0:
        warnings.warn("Stream 0 is passed from a library that you are converting to; CuPy "
                      "assumes 0 as a legacy default stream.", stacklevel=3)
    capsule = array._host.__dlpack__(max_version=max_version)
    _device_type_field(capsule).value = KDL_CUDA
    return capsule


class _HostCapsule:
    """A consumed device capsule presented to NumPy as host memory."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self) -> tuple:
        return (KDL_CPU, 0)


def from_dlpack(array, *, device=None, copy=None) -> ndarray:
    """cupy.from_dlpack: a device array sharing memory with a DLPack producer on the
    (stand-in) GPU; CPU producers are refused, as in CuPy."""
    from minigrad.testing.fake_cupy import cuda  # the stand-in's modules import one another

    if device is not None:
        raise NotImplementedError("from_dlpack() does not support device yet.")
    if not hasattr(array, "__dlpack_device__"):
        capsule = array  # a bare capsule, accepted for backward compatibility
    else:
        device_type, _ = array.__dlpack_device__()
        if device_type == KDL_CPU:
            raise TypeError("CPU arrays cannot be directly imported to CuPy. Use "
                            "`cupy.array(numpy.from_dlpack(input))` instead.")
        if device_type != KDL_CUDA:
            raise TypeError(f"Unsupported array type: {device_type}")
        stream = cuda.get_current_stream().ptr or cuda.runtime.streamLegacy
        try:
            capsule = array.__dlpack__(stream=stream, max_version=_SUPPORTED_VERSION,
                                       copy=copy)
        except TypeError:
            if copy is not None:
                raise
            capsule = array.__dlpack__(stream=stream)
    field = _device_type_field(capsule)
    if field.value != KDL_CUDA:
        raise TypeError(f"Unsupported array type: {field.value}")
    field.value = KDL_CPU
    return adopt(np.from_dlpack(_HostCapsule(capsule)))
