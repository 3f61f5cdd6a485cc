"""The conversion methods of Tensor (minigrad/tensor.py inherits them): to NumPy, Python
numbers and lists, DLPack capsules, other devices and dtypes, with PyTorch's names
(`x.to(...)`, `x.cpu()`, `x.float()`, `x.type("torch.IntTensor")`, ...). Each is written
with ops, so a conversion inside a graph is differentiable."""
from __future__ import annotations

import numpy as np

from minigrad import dtypes, ops
from minigrad.backend import to_device
from minigrad.backend.device import CPU
from minigrad.tensor_base import TensorBase
from minigrad.to_arguments import parse_to_arguments
from minigrad.type_names import parse_type, type_name


class TensorConversions:
    """Tensor's conversion methods; `self` is a Tensor (annotated as its TensorBase: this
    module cannot import tensor.py, which imports it)."""

    __slots__ = ()

    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (a copy to the host for GPU tensors)."""
        return to_device(self.array, CPU)

    def item(self):
        if self.array.size != 1:
            raise RuntimeError(
                f"item(): only one-element tensors can be converted to Python scalars, "
                f"got shape {tuple(self.shape)}"
            )
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point:
            raise TypeError("only integer tensors can be used as an index")
        return int(self.item())

    def __array__(self, dtype=None, copy=None):
        """np.asarray(t) of a CPU tensor (no copy unless asked for). A GPU tensor must be
        copied to the host explicitly (TypeError), as in PyTorch."""
        if self.device.type != "cpu":
            raise TypeError(f"can't convert a {self.device} tensor to a NumPy array "
                            "implicitly: use Tensor.cpu() (or .numpy()) to copy it to host "
                            "memory first")
        array = np.asarray(self.array)
        if dtype is not None and np.dtype(dtype) != array.dtype:
            if copy is False:
                raise ValueError(f"__array__: converting {self.dtype} to {np.dtype(dtype)} "
                                 "needs a copy, but copy=False")
            return array.astype(dtype)
        return array.copy() if copy else array

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack capsule of this tensor's memory (for another library's
        from_dlpack; see minigrad/dlpack.py). Refused for a tensor that requires grad."""
        if self._requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use "
                               "tensor.detach()")
        options = {"stream": stream, "max_version": max_version, "dl_device": dl_device,
                   "copy": copy}
        # pass only what the consumer set: older producers take no keywords but stream
        options = {name: value for name, value in options.items() if value is not None}
        return _as_array(self.array).__dlpack__(**options)

    def __dlpack_device__(self) -> tuple:
        """(DLPack device type, device id): (1, 0) for "cpu", (2, 0) for CUDA device 0."""
        return _as_array(self.array).__dlpack_device__()

    def to(self, *args, **kwargs) -> TensorBase:
        """`.to(dtype)`, `.to(device)`, `.to(device, dtype)` or `.to(other)` (other's
        device and dtype), positional or keyword as in PyTorch (minigrad/to_arguments.py);
        differentiable. Itself when nothing changes, unless copy=True; non_blocking has no
        effect (copies between devices are synchronous)."""
        target = parse_to_arguments(args, kwargs, "to")
        out = self
        if target.device is not None:
            out = ops.to_device(out, target.device)
        if target.dtype is not None:
            out = ops.to_dtype(out, target.dtype)
        return ops.clone(out) if target.copy and out is self else out

    def type(self, dtype=None, non_blocking: bool = False):
        """Without `dtype`, the type's name: 'minigrad.FloatTensor' for float32 on the CPU,
        'minigrad.cuda.FloatTensor' on the GPU (see minigrad/type_names.py). With a dtype,
        a tensor type such as mg.IntTensor, or its name ('torch.IntTensor' too), this
        tensor converted to it: a type names the device as well, a dtype keeps it."""
        if dtype is None:
            return type_name(self.dtype, self.device)
        target_dtype, target_device = parse_type(dtype, "type")
        return self.to(target_device, target_dtype, non_blocking)

    @property
    def is_cuda(self) -> bool:
        """Whether this tensor is on the GPU."""
        return self.device.type == "cuda"

    def cpu(self) -> TensorBase:
        return self.to("cpu")

    def cuda(self) -> TensorBase:
        return self.to("cuda")

    gpu = cuda

    def float(self) -> TensorBase:
        return self.to(dtypes.float32)

    def double(self) -> TensorBase:
        return self.to(dtypes.float64)

    def half(self) -> TensorBase:
        return self.to(dtypes.float16)

    def long(self) -> TensorBase:
        return self.to(dtypes.int64)

    def int(self) -> TensorBase:
        return self.to(dtypes.int32)

    def short(self) -> TensorBase:
        return self.to(dtypes.int16)

    def char(self) -> TensorBase:
        return self.to(dtypes.int8)

    def byte(self) -> TensorBase:
        return self.to(dtypes.uint8)

    def bool(self) -> TensorBase:
        return self.to(dtypes.bool_)

    def type_as(self, other: TensorBase) -> TensorBase:
        return self.to(other.dtype)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point


def _as_array(data):
    """A 0-d product can be a NumPy scalar; DLPack needs an array."""
    return np.asarray(data) if isinstance(data, np.generic) else data
