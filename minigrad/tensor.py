"""Tensor: a backend array, the Function node that made it, and its gradient.

The tensor itself is thin: every computation is an op in `minigrad.ops`, and the methods
below only forward to them, so that `x.exp()` and `mg.exp(x)` are one code path.

`.data` is the raw backend array (a numpy.ndarray on "cpu", a cupy.ndarray on "gpu"),
unlike PyTorch, where it is a detached tensor; `.detach()` gives the tensor.
"""
from __future__ import annotations

import weakref

import numpy as np

from minigrad import dtypes
from minigrad.backend import array_module, as_device, device_of, to_device
from minigrad.backend.device import CPU

_DTYPE_OF_NUMPY = {d.np: d for d in dtypes.ALL}


class Tensor:
    __slots__ = ("data", "_requires_grad", "grad_fn", "_version", "__weakref__", "__dict__")

    # rarely set, so class-level defaults: op outputs skip two attribute writes
    grad = None
    _hooks = None
    _post_accumulate_hooks = None

    # make NumPy defer to our reflected operators (ndarray * Tensor -> Tensor.__rmul__)
    __array_priority__ = 1000

    def __init__(self, data, dtype=None, device=None, requires_grad: bool = False):
        device = as_device(device) if device is not None else None
        self.data = _to_array(data, dtype, device)
        self.grad = None
        self.grad_fn = None
        self._version = [0]
        self._hooks = None
        self._requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _wrap(data, grad_fn, version=None) -> Tensor:
        """Fast constructor for op outputs: no checks, no copies. (A staticmethod: calling
        a classmethod binds a new method object every time.)"""
        t = object.__new__(Tensor)
        t.data = data
        t.grad_fn = grad_fn
        t._requires_grad = grad_fn is not None
        t._version = [0] if version is None else version
        return t

    # ------------------------------------------------------------------ attributes
    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self) -> dtypes.dtype:
        found = _DTYPE_OF_NUMPY.get(self.data.dtype)
        return found if found is not None else dtypes.from_numpy(self.data.dtype)

    @property
    def device(self):
        return device_of(self.data)

    @property
    def xp(self):
        """The array module of this tensor's data (numpy or cupy)."""
        return array_module(self.data)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    @property
    def T(self) -> Tensor:  # noqa: N802
        """All dims reversed (a transpose of a matrix)."""
        if self.data.ndim == 2:
            return _ops.transpose(self, 0, 1)
        return self.permute(*reversed(range(self.ndim)))

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        return int(self.data.size)

    def dim(self) -> int:
        return self.ndim

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", precision=4, prefix="tensor(")
        extras = ""
        if self.dtype not in (dtypes.float32, dtypes.int64, dtypes.bool_):
            extras += f", dtype={self.dtype}"
        if self.device.type != "cpu":
            extras += f", device='{self.device}'"
        if self.grad_fn is not None:
            extras += f", grad_fn=<{self.grad_fn.name}Backward>"
        elif self._requires_grad:
            extras += ", requires_grad=True"
        return f"tensor({body}{extras})"

    # ------------------------------------------------------------------ autograd
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"requires_grad_: only tensors of floating point dtype can require "
                f"gradients, got {self.dtype} of shape {tuple(self.shape)}"
            )
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "requires_grad_(False) on a non-leaf tensor; use .detach() instead"
            )
        self._requires_grad = bool(requires_grad)
        return self

    def detach(self) -> Tensor:
        """The same array, cut from the graph (shares memory and version counter)."""
        return Tensor._wrap(self.data, None, self._version)

    def retain_grad(self) -> None:
        """Keep `.grad` of a non-leaf tensor after backward."""
        if self.grad_fn is None:
            return
        self.grad_fn._retained = weakref.ref(self)

    def register_hook(self, hook):
        """Call `hook(grad)` when this tensor's gradient is computed; a non-None return
        replaces the gradient. Returns a handle with `.remove()`."""
        if not self._requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that "
                               "does not require grad")
        owner = self.grad_fn if self.grad_fn is not None else self
        if owner._hooks is None:
            owner._hooks = []
        owner._hooks.append(hook)
        return _HookHandle(owner._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call `hook(tensor)` on a leaf right after backward has accumulated its `.grad`
        (as soon as every path into it is done, while the rest of backward goes on).
        Returns a handle with `.remove()`."""
        if self.grad_fn is not None:
            raise RuntimeError("register_post_accumulate_grad_hook: only leaf tensors "
                               "accumulate gradients; use register_hook on a non-leaf")
        if not self._requires_grad:
            raise RuntimeError("register_post_accumulate_grad_hook: cannot register a hook "
                               "on a tensor that does not require grad")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = []
        self._post_accumulate_hooks.append(hook)
        return _HookHandle(self._post_accumulate_hooks, hook)

    # ------------------------------------------------------------------ conversion
    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (a copy to the host for GPU tensors)."""
        return to_device(self.data, CPU)

    def item(self):
        if self.data.size != 1:
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
        array = np.asarray(self.data)
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
        return _as_array(self.data).__dlpack__(**options)

    def __dlpack_device__(self) -> tuple:
        """(DLPack device type, device id): (1, 0) for "cpu", (2, 0) for CUDA device 0."""
        return _as_array(self.data).__dlpack_device__()

    def to(self, target=None, dtype=None, device=None) -> Tensor:
        """`.to(dtype)`, `.to(device)` or `.to(device, dtype)`; differentiable."""
        if isinstance(target, (dtypes.dtype, type)) or (
            isinstance(target, str) and target in ("float16", "float32", "float64",
                                                   "int64", "bool")
        ):
            dtype = target
        elif target is not None:
            device = target
        out = self
        if device is not None:
            out = _ops.to_device(out, as_device(device))
        if dtype is not None:
            out = _ops.to_dtype(out, dtypes.as_dtype(dtype))
        return out

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def gpu(self) -> Tensor:
        return self.to("gpu")

    cuda = gpu

    def float(self) -> Tensor:
        return self.to(dtypes.float32)

    def double(self) -> Tensor:
        return self.to(dtypes.float64)

    def half(self) -> Tensor:
        return self.to(dtypes.float16)

    def long(self) -> Tensor:
        return self.to(dtypes.int64)

    def bool(self) -> Tensor:
        return self.to(dtypes.bool_)

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    # ------------------------------------------------------------------ arithmetic
    # The reflected operators swap the operands; the others are bound at the end of this
    # file.
    def __radd__(self, other):
        return _ops.add(other, self)

    def __rsub__(self, other):
        return _ops.sub(other, self)

    def __rmul__(self, other):
        return _ops.mul(other, self)

    def __rtruediv__(self, other):
        return _ops.div(other, self)

    def __rpow__(self, other):
        return _ops.pow(other, self)

    def __rmatmul__(self, other):
        return _ops.matmul(other, self)

    def __neg__(self):
        return _ops.neg(self)

    def __invert__(self):
        return _ops.logical_not(self)

    __hash__ = object.__hash__

    def __getitem__(self, index):
        return _ops.getitem(self, index)

    def __setitem__(self, index, value) -> None:
        _ops.setitem_(self, index, value)

    # ------------------------------------------------------------------ elementwise
    def exp(self):
        return _ops.exp(self)

    def log(self):
        return _ops.log(self)

    def sqrt(self):
        return _ops.sqrt(self)

    def rsqrt(self):
        return _ops.rsqrt(self)

    def abs(self):
        return _ops.abs(self)

    def tanh(self):
        return _ops.tanh(self)

    def sigmoid(self):
        return _ops.sigmoid(self)

    def relu(self):
        return _ops.relu(self)

    def gelu(self, approximate: str = "none"):
        return _ops.gelu(self, approximate)

    def pow(self, exponent):
        return _ops.pow(self, exponent)

    def clamp(self, min=None, max=None):  # noqa: A002  (torch's names)
        return _ops.clamp(self, min, max)

    def masked_fill(self, mask, value):
        return _ops.masked_fill(self, mask, value)

    def softmax(self, dim: int):
        return _ops.softmax(self, dim)

    def log_softmax(self, dim: int):
        return _ops.log_softmax(self, dim)

    def maximum(self, other):
        return _ops.maximum(self, other)

    def clone(self):
        return _ops.clone(self)

    # ------------------------------------------------------------------ reductions
    def sum(self, dim=None, keepdim: bool = False):
        return _ops.sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim: bool = False):
        return _ops.mean(self, dim, keepdim)

    def max(self, dim=None, keepdim: bool = False):
        return _ops.max(self, dim, keepdim)

    def min(self, dim=None, keepdim: bool = False):
        return _ops.min(self, dim, keepdim)

    def argmax(self, dim=None, keepdim: bool = False):
        return _ops.argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim: bool = False):
        return _ops.argmin(self, dim, keepdim)

    def var(self, dim=None, unbiased: bool = True, keepdim: bool = False, correction=None):
        return _ops.var(self, dim, unbiased, keepdim, correction)

    def std(self, dim=None, unbiased: bool = True, keepdim: bool = False, correction=None):
        return _ops.std(self, dim, unbiased, keepdim, correction)

    def logsumexp(self, dim, keepdim: bool = False):
        return _ops.logsumexp(self, dim, keepdim)

    # ------------------------------------------------------------------ shape
    def reshape(self, *shape):
        return _ops.reshape(self, shape)

    view = reshape

    def permute(self, *dims):
        return _ops.permute(self, dims)

    def transpose(self, dim0: int, dim1: int):
        return _ops.transpose(self, dim0, dim1)

    def unsqueeze(self, dim: int):
        return _ops.unsqueeze(self, dim)

    def squeeze(self, dim=None):
        return _ops.squeeze(self, dim)

    def expand(self, *sizes):
        return _ops.expand(self, sizes)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        return _ops.flatten(self, start_dim, end_dim)

    def contiguous(self):
        return _ops.contiguous(self)

    def split(self, split_size, dim: int = 0):
        return _ops.split(self, split_size, dim)

    def chunk(self, chunks: int, dim: int = 0):
        return _ops.chunk(self, chunks, dim)

    # ------------------------------------------------------------------ in place
    # In-place ops never enter the graph; they bump the version counter, so a backward
    # that saved this tensor before the change raises instead of using stale values.
    def add_(self, other, alpha=1):
        return _ops.inplace(self, "add", other if alpha == 1 else other * alpha)

    def sub_(self, other, alpha=1):
        return _ops.inplace(self, "sub", other if alpha == 1 else other * alpha)

    def mul_(self, other):
        return _ops.inplace(self, "mul", other)

    def div_(self, other):
        return _ops.inplace(self, "div", other)

    def copy_(self, other):
        return _ops.inplace(self, "copy", other)

    def fill_(self, value):
        return _ops.inplace(self, "copy", value)

    def zero_(self):
        return _ops.inplace(self, "copy", 0)

    def masked_fill_(self, mask, value):
        return _ops.inplace(self, "masked_fill", value, mask=mask)

    def clamp_(self, min=None, max=None):  # noqa: A002
        return _ops.inplace(self, "clamp", None, low=min, high=max)

    def uniform_(self, low: float = 0.0, high: float = 1.0):
        return _ops.inplace(self, "copy", _random.uniform_like(self, low, high))

    def normal_(self, mean: float = 0.0, std: float = 1.0):
        return _ops.inplace(self, "copy", _random.normal_like(self, mean, std))


class _HookHandle:
    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _to_array(data, dtype, device):
    """Turn Python data, arrays or tensors into a backend array of the right dtype."""
    if isinstance(data, Tensor):
        data = data.data
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(data, (np.ndarray, np.generic)) or hasattr(data, "__cuda_array_interface__"):
        array = data
        if dtype is None:
            dtype = dtypes.from_numpy(array.dtype)
    else:
        array = np.asarray(data)
        if dtype is None:
            dtype = _infer_dtype(array)
    xp = array_module(array) if device is None else None
    if device is not None:
        array = to_device(array, device)
        xp = array_module(array)
    if array.dtype != dtype.np:
        array = array.astype(dtype.np)
    elif array is data:
        array = array.copy()
    return xp.ascontiguousarray(array) if array.ndim else xp.asarray(array)


def _as_array(data):
    """A 0-d product can be a NumPy scalar; DLPack needs an array."""
    return np.asarray(data) if isinstance(data, np.generic) else data


def _infer_dtype(array: np.ndarray) -> dtypes.dtype:
    """Python floats become float32 and ints int64, like torch.tensor."""
    if array.dtype == np.bool_:
        return dtypes.bool_
    if array.dtype.kind in "iu":
        return dtypes.int64
    if array.dtype.kind == "f":
        return dtypes.float32
    raise TypeError(f"tensor(): cannot make a tensor from data of type {array.dtype}")


from minigrad import autograd as _autograd  # noqa: E402  (they import Tensor)
from minigrad import ops as _ops  # noqa: E402
from minigrad import random as _random  # noqa: E402

# Operators whose operands keep their order are the op functions themselves: one Python
# call less for every `a + b` (the reflected ones, like __radd__, swap them above).
# The comparisons are elementwise, like torch's, so a Tensor is hashed by identity.
Tensor.__add__ = _ops.add
Tensor.__sub__ = _ops.sub
Tensor.__mul__ = _ops.mul
Tensor.__truediv__ = _ops.div
Tensor.__pow__ = _ops.pow
Tensor.__matmul__ = _ops.matmul
Tensor.__eq__ = _ops.eq
Tensor.__ne__ = _ops.ne
Tensor.__lt__ = _ops.lt
Tensor.__le__ = _ops.le
Tensor.__gt__ = _ops.gt
Tensor.__ge__ = _ops.ge
Tensor.__and__ = _ops.logical_and
Tensor.__or__ = _ops.logical_or
# x.backward(...) is the engine's backward itself, for the same reason
Tensor.backward = _autograd.backward
