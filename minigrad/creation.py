"""Functions that make tensors: tensor, zeros, ones, full, arange, eye, rand, randn, ..."""
from __future__ import annotations

import numpy as np

from minigrad import dtypes
from minigrad import random as _random
from minigrad.backend import as_device, to_device
from minigrad.tensor import Tensor, constant


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, scalars, arrays or tensors)."""
    return Tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array (float32 stays float32)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    dtypes.from_numpy(array.dtype)  # rejects unsupported dtypes clearly
    if array.dtype not in (d.np for d in dtypes.ALL):
        array = array.astype(dtypes.from_numpy(array.dtype).np)
    return constant(array)


def _shape(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(n) for n in size)


def _make(array, dtype, device, requires_grad) -> Tensor:
    device = as_device(device)
    out = constant(to_device(array, device) if device.type != "cpu" else array)
    if dtype is not None and out.data.dtype != dtypes.as_dtype(dtype).np:
        out = constant(out.data.astype(dtypes.as_dtype(dtype).np))
    if requires_grad:
        out.requires_grad_(True)
    return out


def _float(dtype) -> dtypes.dtype:
    return dtypes.as_dtype(dtype) if dtype is not None else dtypes.DEFAULT_FLOAT


def full(size, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    if dtype is None:
        dtype = dtypes.of_python_scalar(fill_value)
    return _make(np.full(_shape((size,)), fill_value, dtype=dtypes.as_dtype(dtype).np), None,
                 device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _make(np.zeros(_shape(size), _float(dtype).np), None, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _make(np.ones(_shape(size), _float(dtype).np), None, device, requires_grad)


def zeros_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return zeros(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                 requires_grad=requires_grad)


def ones_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return ones(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)


def full_like(t: Tensor, fill_value, dtype=None, device=None) -> Tensor:
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device or t.device)


def arange(start, end=None, step=1, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_integral = all(isinstance(v, int) for v in (start, end, step))
        dtype = dtypes.int64 if is_integral else dtypes.float32
    array = np.arange(start, end, step, dtype=dtypes.as_dtype(dtype).np)
    return _make(array, None, device, requires_grad)


def eye(n: int, m: int | None = None, dtype=None, device=None,
        requires_grad: bool = False) -> Tensor:
    return _make(np.eye(n, m, dtype=_float(dtype).np), None, device, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    device = as_device(device)
    array = _random.uniform(_shape(size), 0.0, 1.0, _float(dtype), device)
    return _make(array, None, device, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples."""
    device = as_device(device)
    array = _random.normal(_shape(size), 0.0, 1.0, _float(dtype), device)
    return _make(array, None, device, requires_grad)


def randint(low, high=None, size=(), dtype=None, device=None) -> Tensor:
    """Integers uniform in [low, high) (or [0, low) when high is omitted)."""
    if high is None:
        low, high = 0, low
    device = as_device(device)
    array = _random.integers(low, high, _shape((size,)), device)
    return _make(array, dtype, device, False)
