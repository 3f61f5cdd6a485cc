"""The traced array of a GPU tensor, and the recording wrappers of the CuPy module.

A NumPy array reports its operations through NumPy's hooks (traced.py). CuPy's module
functions have no such hook: `cupy.exp(x)` runs CuPy's kernel whatever `x` is. So a
capture that reaches a GPU tensor sees CuPy work in two places:

- `TracedDeviceArray`, a subclass of the cupy module's ndarray made for each module
  (real CuPy or the stand-in), whose operators (`a + b`, `a[i] = v`, `a += b`), methods
  (`a.sum()`, `a.reshape()`, ...) and NumPy hooks record one step each, as TracedArray's
  do; a value read into Python (`bool(a)`, `a.item()`) becomes a checked value, and a
  copy to the host (`a.get()`) or printing stops the capture;
- `device_functions(cupy)`: each public function and ufunc of the module, wrapped to
  record its call (patches.py sets them on the module for the length of one capture and
  puts the originals back, so eager code calls CuPy directly).

The recorded function is CuPy's own (the unbound ndarray method, the module function,
the ufunc), so a replay calls CuPy on plain device arrays: stream replay.
"""
from __future__ import annotations

import functools
import operator
import types

import numpy as np

from minigrad.backend.device import cupy_or_none
from minigrad.compile.traced import (
    TRACED_TYPES,
    WRITING_FUNCTIONS,
    TracedArray,
    active_recorder,
    plain_structure,
    recorded_method,
    recorded_property,
    refused,
    value_read,
)

# operators of cupy.ndarray that compute a new array
_OPERATOR_NAMES = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
                   "or", "xor", "lshift", "rshift")
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_UNARY = ("neg", "pos", "abs", "invert")
RECORDED_METHODS = (
    *(f"__{n}__" for n in _OPERATOR_NAMES), *(f"__r{n}__" for n in _OPERATOR_NAMES),
    *(f"__{n}__" for n in _COMPARISONS), *(f"__{n}__" for n in _UNARY),
    "__getitem__", "__copy__", "all", "any", "argmax", "argmin", "argsort", "astype", "clip",
    "conj", "copy", "cumprod", "cumsum", "diagonal", "dot", "flatten", "max", "mean", "min",
    "nonzero", "prod", "ravel", "repeat", "reshape", "round", "squeeze", "std", "sum",
    "swapaxes", "take", "trace", "transpose", "var", "view",
)
# methods that write into the array they are called on
WRITING_METHODS = ("__setitem__", "fill", "sort", "partition", "put",
                   *(f"__i{n}__" for n in _OPERATOR_NAMES))
RECORDED_PROPERTIES = ("T", "real", "imag")
VALUE_READS = {"__bool__": bool, "__int__": int, "__float__": float,
               "__complex__": complex, "__index__": operator.index,
               "item": lambda a: a.item(), "tolist": lambda a: a.tolist()}
# copies to the host and printing: no replay can redo them inside the step
REFUSED = ("get", "set", "tobytes", "__repr__", "__str__", "__format__", "__reduce__",
           "__reduce_ex__", "__dlpack__", "toDlpack")
# module functions that make nothing on the device, or take Python functions
NOT_RECORDED = frozenset(("get_array_module", "is_available", "fuse", "memoize",
                          "clear_memo", "show_config", "get_default_memory_pool",
                          "get_default_pinned_memory_pool", "asnumpy", "from_dlpack",
                          "fromDlpack", "ndarray", "ufunc", "dtype", "result_type",
                          "can_cast", "promote_types", "common_type", "min_scalar_type",
                          "isscalar", "ndim", "shape", "size", "binary_repr", "base_repr"))
# the ufunc methods that write into their first argument
_WRITING_UFUNC_METHODS = ("at",)


@functools.cache
def traced_class(device_ndarray: type) -> type:
    """The TracedDeviceArray subclass of one module's ndarray (module docstring)."""
    namespace: dict = {"__slots__": () if "__slots__" in vars(device_ndarray) else None,
                       "__doc__": "A device array whose operations are recorded while a "
                                  "capture runs (minigrad.compile.traced_device)."}
    if namespace["__slots__"] is None:
        del namespace["__slots__"]
    for name in RECORDED_METHODS + WRITING_METHODS:
        if hasattr(device_ndarray, name):
            namespace[name] = recorded_method(device_ndarray, name, name in WRITING_METHODS)
    for name in RECORDED_PROPERTIES:
        if hasattr(device_ndarray, name):
            namespace[name] = recorded_property(name)
    for name, convert in VALUE_READS.items():
        namespace[name] = value_read(name, convert)
    for name in REFUSED:
        if hasattr(device_ndarray, name):
            namespace[name] = refused(device_ndarray, name, f"cupy.ndarray.{name.strip('_')}() "
                                      "of a captured value (a copy to the host)")
    # NumPy's hooks and row-by-row iteration, as TracedArray's
    for name in ("__array_ufunc__", "__array_function__", "__iter__"):
        namespace[name] = vars(TracedArray)[name]
    traced = type("TracedDeviceArray", (device_ndarray,), namespace)
    TRACED_TYPES.add(traced)
    return traced


def is_traced_device(array) -> bool:
    return type(array) in TRACED_TYPES and type(array) is not TracedArray


def traced_device_view(array):
    """A TracedDeviceArray viewing the memory of a plain device array."""
    device_ndarray = type(array)
    return device_ndarray.view(array, type=traced_class(device_ndarray))


def plain_device(array):
    """The plain device array a TracedDeviceArray views (the same memory)."""
    device_ndarray = type(array)
    if is_traced_device(array):
        device_ndarray = device_ndarray.__mro__[1]
    return device_ndarray.view(array, type=device_ndarray)


# ----------------------------------------------------------------------------- any array


def is_device_array(value) -> bool:
    """A CuPy array (of the stand-in under MINIGRAD_FAKE_GPU=1), traced or not."""
    if isinstance(value, np.ndarray) or type(value) in _PYTHON_VALUES:
        return False
    cupy = cupy_or_none()
    return cupy is not None and isinstance(value, cupy.ndarray)


def is_array(value) -> bool:
    """A NumPy or CuPy array, traced or not."""
    return isinstance(value, np.ndarray) or is_device_array(value)


def is_plain_array(value) -> bool:
    """A NumPy or CuPy array that no capture traces."""
    if type(value) is np.ndarray:
        return True
    cupy = cupy_or_none()
    return cupy is not None and type(value) is cupy.ndarray


def is_traced(value) -> bool:
    return type(value) in TRACED_TYPES


def traced_view(array):
    """The traced array viewing a plain NumPy or CuPy array's memory."""
    if isinstance(array, np.ndarray):
        return np.ndarray.view(array, TracedArray)
    return traced_device_view(array)


def root(array):
    """The array that owns the memory `array` views (NumPy or CuPy)."""
    while is_array(array.base):
        array = array.base
    return array


_PYTHON_VALUES = (bool, int, float, complex, str, type(None))


# ----------------------------------------------------------------------------- the module


def device_functions(cupy) -> dict:
    """name -> a recording wrapper, for every public function and ufunc of `cupy`."""
    wrappers = {}
    for name in dir(cupy):
        if name.startswith("_") or name in NOT_RECORDED:
            continue
        value = getattr(cupy, name, None)
        if callable(value) and not isinstance(value, (type, types.ModuleType)):
            wrappers[name] = RecordedFunction(value, writes_first=name in WRITING_FUNCTIONS)
    return wrappers


class RecordedFunction:
    """A CuPy function or ufunc whose calls are recorded while a capture runs; its
    attributes are the function's, and a ufunc's methods (`cupy.add.at`) record too."""

    def __init__(self, function, writes_first: bool = False):
        self._function = function
        self._writes_first = writes_first
        functools.update_wrapper(self, function, updated=())

    def __call__(self, *args, **kwargs):
        recorder = active_recorder()
        if recorder is None:
            return self._function(*plain_structure(args), **plain_structure(kwargs))
        writes = kwargs.get("out", ())
        if self._writes_first and args:
            writes = (args[0],)
        return recorder.call(self._function, args, kwargs, writes=writes)

    def __getattr__(self, name: str):
        value = getattr(self._function, name)
        if name in ("at", "reduce", "accumulate", "outer", "reduceat") and callable(value):
            return RecordedFunction(value, writes_first=name in _WRITING_UFUNC_METHODS)
        return value

    def __repr__(self) -> str:
        return f"<recorded {self._function!r}>"
