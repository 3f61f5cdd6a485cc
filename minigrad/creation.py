"""Functions that make tensors: tensor, zeros, ones, full, empty, arange, eye, rand, randn, ...

Their arguments are checked as PyTorch checks them, and a bad one raises naming the
function and the argument: a float or bool size is a TypeError (NumPy would truncate
2.5 to 2), a negative size a ValueError, ragged nested lists a ValueError saying where.
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from minigrad import dtypes
from minigrad.backend import as_device, to_device
from minigrad.generator import source as random_source
from minigrad.tensor import Tensor, constant

# NumPy's limit on dimensions, and so minigrad's
MAX_DIMS = 64


def as_size(value, op: str, argument: str) -> int:
    """`value` as a non-negative int (NumPy integers and integer tensors included), else
    TypeError or ValueError naming `op` and `argument`; for layers' size arguments too."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {argument} must be an integer, got the bool {value!r}")
    try:
        size = operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {argument} must be an integer, got {value!r} of type "
                        f"{type(value).__name__}") from None
    if size < 0:
        raise ValueError(f"{op}: {argument} must be non-negative, got {size}")
    return size


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, scalars, arrays or tensors)."""
    try:
        return Tensor(data, dtype=_dtype_or_none(dtype, "tensor"), device=device,
                      requires_grad=requires_grad)
    except (TypeError, ValueError):
        if not isinstance(data, (np.ndarray, Tensor)):
            _explain_bad_data(data)  # raises saying where, when the data is at fault
        raise


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array (float32 stays float32)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    dtypes.from_numpy(array.dtype)  # rejects unsupported dtypes clearly
    if array.dtype not in (d.np for d in dtypes.ALL):
        array = array.astype(dtypes.from_numpy(array.dtype).np)
    return constant(array)


def full(size, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with `fill_value` (its dtype by default: bool, int64 or
    float32)."""
    if isinstance(fill_value, Tensor) and fill_value.ndim == 0:
        fill_value = fill_value.item()
    if not isinstance(fill_value, (numbers.Number, np.bool_)):
        raise TypeError(f"full: fill_value must be a number or a bool, got {fill_value!r} "
                        f"of type {type(fill_value).__name__}")
    if dtype is None:
        plain = fill_value.item() if isinstance(fill_value, np.generic) else fill_value
        dtype = dtypes.of_python_scalar(plain)
    dtype = _dtype(dtype, "full")
    return _make(np.full(_shape((size,), "full"), fill_value, dtype=dtype.np), device,
                 requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros: zeros(2, 3), zeros((2, 3)) or zeros([2, 3])."""
    return _make(np.zeros(_shape(size, "zeros"), _float(dtype, "zeros").np), device,
                 requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones: ones(2, 3), ones((2, 3)) or ones([2, 3])."""
    return _make(np.ones(_shape(size, "ones"), _float(dtype, "ones").np), device,
                 requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of `size` whose values are whatever the memory held (fast to make;
    fill it before reading it)."""
    return _make(np.empty(_shape(size, "empty"), _float(dtype, "empty").np), device,
                 requires_grad)


def zeros_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Zeros of `t`'s shape, dtype and device unless given."""
    _check_tensor(t, "zeros_like")
    return zeros(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                 requires_grad=requires_grad)


def ones_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Ones of `t`'s shape, dtype and device unless given."""
    _check_tensor(t, "ones_like")
    return ones(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)


def empty_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor of `t`'s shape, dtype and device unless given."""
    _check_tensor(t, "empty_like")
    return empty(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                 requires_grad=requires_grad)


def full_like(t: Tensor, fill_value, dtype=None, device=None,
              requires_grad: bool = False) -> Tensor:
    """`fill_value` in `t`'s shape, dtype and device unless given."""
    _check_tensor(t, "full_like")
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Values from start (default 0) up to, not including, end, `step` apart."""
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) and v.ndim == 0 else v
                        for v in (start, end, step))
    for name, value in (("start", start), ("end", end), ("step", step)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"arange: {name} must be a real number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"arange: {name} must be finite, got {value}")
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: the range from start={start} to end={end} runs against "
                         f"step={step}")
    if dtype is None:
        is_integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = dtypes.int64 if is_integral else dtypes.float32
    array = np.arange(start, end, step, dtype=_dtype(dtype, "arange").np)
    return _make(array, device, requires_grad)


def eye(n: int, m: int | None = None, dtype=None, device=None,
        requires_grad: bool = False) -> Tensor:
    """The n x m (default n x n) identity matrix."""
    n = as_size(n, "eye", "n")
    m = n if m is None else as_size(m, "eye", "m")
    return _make(np.eye(n, m, dtype=_float(dtype, "eye").np), device, requires_grad)


def rand(*size, generator=None, dtype=None, device=None,
         requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) (from `generator` when given, see mg.Generator)."""
    shape, dtype = _shape(size, "rand"), as_floating(dtype, "rand")
    device = as_device(device)
    array = random_source(generator).uniform(shape, 0.0, 1.0, dtype, device)
    return _make(array, device, requires_grad)


def randn(*size, generator=None, dtype=None, device=None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples (from `generator` when given, see mg.Generator)."""
    shape, dtype = _shape(size, "randn"), as_floating(dtype, "randn")
    device = as_device(device)
    array = random_source(generator).normal(shape, 0.0, 1.0, dtype, device)
    return _make(array, device, requires_grad)


def randint(*args, low=None, high=None, size=None, generator=None, dtype=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """Integers uniform in [low, high), as torch.randint: randint(high, size) or
    randint(low, high, size), size a tuple; low defaults to 0. Keywords work too."""
    low, high, size = _randint_arguments(list(args), low, high, size)
    shape = _shape((size,), "randint")
    device = as_device(device)
    array = random_source(generator).integers(low, high, shape, device)
    dtype = _dtype_or_none(dtype, "randint")
    if dtype is not None and dtype.np != array.dtype:
        array = array.astype(dtype.np)
    return _make(array, device, requires_grad)


def _randint_arguments(positional: list, low, high, size) -> tuple:
    if size is None and positional and isinstance(positional[-1], (tuple, list)):
        size = positional.pop()
    if high is None and positional:
        high = positional.pop()
    if low is None:
        low = positional.pop() if positional else 0
    if positional or high is None or size is None:
        raise TypeError(
            "randint: expected randint(high, size) or randint(low, high, size) with size a "
            f"tuple such as (3,); got low={low!r}, high={high!r}, size={size!r}"
            + (f" and extra arguments {positional}" if positional else "")
        )
    low, high = _integer(low, "randint", "low"), _integer(high, "randint", "high")
    if low >= high:
        raise RuntimeError(f"randint: expected low < high, got low={low}, high={high}")
    return low, high, size


def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0, ..., n - 1 (int64 unless dtype says otherwise)."""
    n = as_size(n, "randperm", "n")
    device = as_device(device)
    # the order that sorts n uniform draws is a uniformly random permutation
    keys = random_source(generator).uniform((n,), 0.0, 1.0, dtypes.float64, device)
    array = keys.argsort().astype(np.int64)
    dtype = _dtype_or_none(dtype, "randperm")
    if dtype is not None and dtype.np != array.dtype:
        array = array.astype(dtype.np)
    return _make(array, device, requires_grad)


# ----------------------------------------------------------------------------- checks


def _shape(size: tuple, op: str) -> tuple[int, ...]:
    """Accept f(2, 3), f((2, 3)) and f([2, 3]) with non-negative integer sizes."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    try:
        return tuple(as_size(n, op, "size") for n in size)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{exc} in {tuple(size)}") from None


def _integer(value, op: str, argument: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {argument} must be an integer, got the bool {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {argument} must be an integer, got {value!r} of type "
                        f"{type(value).__name__}") from None


def _dtype(dtype, op: str) -> dtypes.dtype:
    try:
        return dtypes.as_dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: unknown dtype {dtype!r}; expected one of {dtypes.NAMES}"
                        ) from None


def _dtype_or_none(dtype, op: str) -> dtypes.dtype | None:
    return None if dtype is None else _dtype(dtype, op)


def _float(dtype, op: str) -> dtypes.dtype:
    return _dtype(dtype, op) if dtype is not None else dtypes.DEFAULT_FLOAT


def as_floating(dtype, op: str) -> dtypes.dtype:
    dtype = _float(dtype, op)
    if not dtype.is_floating_point:
        raise TypeError(f"{op}: dtype must be a floating point type, got {dtype}")
    return dtype


def _check_tensor(t, op: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(t).__name__}")


def _make(array, device, requires_grad) -> Tensor:
    device = as_device(device)
    out = constant(to_device(array, device) if device.type != "cpu" else array)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _explain_bad_data(data) -> None:
    """Raise an error saying where nested `data` is ragged or holds a non-number, the way
    torch.tensor does ("expected a sequence of length 2 at dim 1 (got 1)"); return if
    nothing is wrong with the data itself."""
    shape, item = [], data
    while isinstance(item, (list, tuple)):
        shape.append(len(item))
        if len(shape) > MAX_DIMS:
            raise ValueError(f"tensor: data nests more than {MAX_DIMS} levels deep, the most "
                             "dimensions a tensor can have")
        if not item:
            break
        item = item[0]
    if isinstance(item, (np.ndarray, Tensor)):  # arrays inside lists add their dims
        shape += item.shape
    _check_nested(data, shape, 0, "data")


def _check_nested(item, shape: list, dim: int, where: str) -> None:
    if isinstance(item, (np.ndarray, Tensor)):
        if tuple(item.shape) != tuple(shape[dim:]):
            raise ValueError(f"tensor: expected shape {tuple(shape[dim:])} at dim {dim}, "
                             f"got {tuple(item.shape)} at {where}")
        return
    if dim == len(shape):
        if isinstance(item, (list, tuple)):
            raise ValueError(f"tensor: expected a number at dim {dim}, got a sequence at "
                             f"{where}")
        if (not isinstance(item, (numbers.Number, np.bool_, np.number))
                or isinstance(item, (complex, np.complexfloating))):
            raise TypeError(f"tensor: cannot make a tensor from {where}, a "
                            f"{type(item).__name__}: expected numbers or bools")
        return
    if not isinstance(item, (list, tuple)):
        raise ValueError(f"tensor: expected a sequence of length {shape[dim]} at dim {dim}, "
                         f"got a {type(item).__name__} at {where}")
    if len(item) != shape[dim]:
        raise ValueError(f"tensor: expected a sequence of length {shape[dim]} at dim {dim} "
                         f"(got {len(item)}) at {where}")
    for index, child in enumerate(item):
        _check_nested(child, shape, dim + 1, f"{where}[{index}]")
