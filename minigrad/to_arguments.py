"""The arguments of `.to(...)`, read the same way for Tensor.to and Module.to, in the
three forms PyTorch accepts (positional or keyword):

    to(device=None, dtype=None, non_blocking=False, copy=False)
    to(dtype, non_blocking=False, copy=False)
    to(tensor, non_blocking=False, copy=False)      # the tensor's device and dtype

A device is a `mg.device`, a string ('cpu', 'cuda', 'cuda:0', 'gpu') or a GPU index; a
dtype is a `mg.dtype`, a NumPy dtype or scalar type, a name such as 'float64', or one of
Python's bool, int and float.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from minigrad import dtypes
from minigrad.backend import Device, as_device
from minigrad.tensor_base import TensorBase

_FORMS = ("to(device=None, dtype=None, non_blocking=False, copy=False), to(dtype, "
          "non_blocking=False, copy=False) or to(tensor, non_blocking=False, copy=False)")


class ToArguments(NamedTuple):
    device: Device | None
    dtype: dtypes.dtype | None
    non_blocking: bool
    copy: bool


def parse_to_arguments(args: tuple, kwargs: dict, caller: str) -> ToArguments:
    """The device, dtype, non_blocking and copy that `caller(*args, **kwargs)` asks for
    (None where not given), or a TypeError naming `caller` and the forms it accepts."""
    first = args[0] if args else None
    if isinstance(first, TensorBase):
        names = ("tensor", "non_blocking", "copy")
    elif args and is_dtype(first):
        names = ("dtype", "non_blocking", "copy")
    else:
        names = ("device", "dtype", "non_blocking", "copy")
    if len(args) > len(names):
        raise _invalid(caller, args, kwargs, f"more than {len(names)} positional arguments")
    given = dict(zip(names, args))
    for name, value in kwargs.items():
        if name in given or name not in ("device", "dtype", "non_blocking", "copy"):
            raise _invalid(caller, args, kwargs, f"unexpected or repeated keyword {name!r}")
        given[name] = value
    if "tensor" in given and ("device" in given or "dtype" in given):
        raise _invalid(caller, args, kwargs, "a tensor given with a device or dtype")
    if "tensor" in given:
        given["device"], given["dtype"] = given["tensor"].device, given["tensor"].dtype
    flags = {name: given.get(name, False) for name in ("non_blocking", "copy")}
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise _invalid(caller, args, kwargs, f"{name} must be a bool, got {value!r}")
    return ToArguments(_device(given.get("device"), caller), _dtype(given.get("dtype"), caller),
                       **flags)


def is_dtype(value) -> bool:
    """Whether `value` names a dtype rather than a device."""
    return (isinstance(value, (dtypes.dtype, np.dtype))
            or any(value is python_type for python_type in (bool, int, float))
            or (isinstance(value, type) and issubclass(value, np.generic))
            or (isinstance(value, str) and dtypes.is_name(value)))


def _device(value, caller: str) -> Device | None:
    if value is None:
        return None
    if isinstance(value, (bool, float)) or not isinstance(value, (str, int, Device)):
        raise TypeError(f"{caller}: expected a device ('cpu', 'cuda', 'cuda:0', a mg.device "
                        f"or a GPU index) or a dtype, got {value!r} of type "
                        f"{type(value).__name__}")
    return as_device(value)


def _dtype(value, caller: str) -> dtypes.dtype | None:
    if value is None:
        return None
    if not is_dtype(value):
        raise TypeError(f"{caller}: expected a dtype ({dtypes.NAMES}), got {value!r}")
    return dtypes.as_dtype(value)


def _invalid(caller: str, args: tuple, kwargs: dict, problem: str) -> TypeError:
    got = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return TypeError(f"{caller}: invalid arguments ({', '.join(got)}): {problem}; expected "
                     f"{_FORMS}")
