"""The tensor types of PyTorch's older API: mg.FloatTensor, mg.LongTensor, mg.IntTensor,
... and their GPU twins mg.cuda.FloatTensor, ... (see type_names.py for the names).

    mg.FloatTensor([1, 2])          # from data: mg.tensor([1, 2], dtype=mg.float32)
    mg.FloatTensor(2, 3)            # from sizes: uninitialised, as mg.empty(2, 3)
    mg.FloatTensor(x)               # x itself (a float32 tensor), without its history
    isinstance(x, mg.FloatTensor)   # x is a float32 tensor on the CPU
    x.type(mg.IntTensor)            # conversion (Tensor.type)

They are classes whose metaclass is TensorType (as PyTorch's are torch.tensortype's), but
no tensor's class: every tensor is a mg.Tensor, and isinstance asks its dtype and device.
"""
from __future__ import annotations

import operator

import numpy as np

from minigrad import dtypes
from minigrad.backend import Device
from minigrad.creation import empty, tensor
from minigrad.size import Size
from minigrad.tensor import Tensor
from minigrad.type_names import NAMES


class TensorType(type):
    """The class of mg.FloatTensor and friends: each has a `dtype` and `is_cuda`, makes
    tensors of those when called, and recognises them in isinstance()."""

    dtype: dtypes.dtype
    is_cuda: bool

    def __call__(cls, *args, device=None) -> Tensor:
        """A tensor from data (one sequence or array), from sizes (ints, or one mg.Size;
        uninitialised), the tensor given when it has this dtype and device (without its
        history), or an empty one without arguments."""
        where = "cuda" if cls.is_cuda else "cpu"
        if device is not None and Device(device).type != where:
            raise RuntimeError(f"{cls.__name__}: this constructor makes {where} tensors, but "
                               f"device={device!r} was passed")
        if len(args) == 1 and isinstance(args[0], Tensor):
            return _alias(cls, args[0])
        if len(args) == 1 and isinstance(args[0], Size):
            return empty(args[0], dtype=cls.dtype, device=where)
        if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)):
            return tensor(args[0], dtype=cls.dtype, device=where)
        if not all(_is_int(size) for size in args):
            raise TypeError(f"{cls.__name__}: expected data (a sequence or an array), sizes "
                            f"(ints or a mg.Size) or a tensor, got ({_names_of(args)})")
        return empty(args or (0,), dtype=cls.dtype, device=where)

    def __instancecheck__(cls, instance) -> bool:
        return (isinstance(instance, Tensor) and instance.dtype is cls.dtype
                and instance.is_cuda == cls.is_cuda)


def _tensor_type(dtype: dtypes.dtype, is_cuda: bool) -> TensorType:
    module = "minigrad.cuda" if is_cuda else "minigrad"
    device = "the GPU" if is_cuda else "the CPU"
    return TensorType(NAMES[dtype], (), {
        "dtype": dtype, "is_cuda": is_cuda, "__module__": module,
        "__doc__": f"The {dtype.name} tensors on {device} (see minigrad/tensor_types.py).",
    })


def _alias(cls: TensorType, source: Tensor) -> Tensor:
    if source.dtype is not cls.dtype or source.is_cuda != cls.is_cuda:
        raise TypeError(f"{cls.__name__}: expected a {cls.dtype} tensor on "
                        f"{'cuda' if cls.is_cuda else 'cpu'}, got a {source.dtype} tensor on "
                        f"{source.device}; convert it with .type({cls.__name__}) or .to()")
    return source.detach()


def _is_int(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _names_of(args: tuple) -> str:
    return ", ".join(type(a).__name__ for a in args)


BoolTensor = _tensor_type(dtypes.bool_, is_cuda=False)
ByteTensor = _tensor_type(dtypes.uint8, is_cuda=False)
CharTensor = _tensor_type(dtypes.int8, is_cuda=False)
ShortTensor = _tensor_type(dtypes.int16, is_cuda=False)
IntTensor = _tensor_type(dtypes.int32, is_cuda=False)
LongTensor = _tensor_type(dtypes.int64, is_cuda=False)
HalfTensor = _tensor_type(dtypes.float16, is_cuda=False)
FloatTensor = _tensor_type(dtypes.float32, is_cuda=False)
DoubleTensor = _tensor_type(dtypes.float64, is_cuda=False)

# mg.cuda.FloatTensor and friends, by name (minigrad/backend/cuda.py hands them out)
CUDA_TYPES = {name: _tensor_type(dtype, is_cuda=True) for dtype, name in NAMES.items()}
