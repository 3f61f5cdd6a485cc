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
from minigrad.compile.traced import ACTIVE, TracedArray, plain_structure

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


def _recorder():
    recorder = ACTIVE.recorder
    return None if recorder is None or recorder.depth else recorder


_TRACED_CLASSES: set = set()


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
            namespace[name] = _recorded_method(device_ndarray, name)
    for name in RECORDED_PROPERTIES:
        if hasattr(device_ndarray, name):
            namespace[name] = _recorded_property(device_ndarray, name)
    for name, convert in VALUE_READS.items():
        namespace[name] = _value_read(device_ndarray, name, convert)
    for name in REFUSED:
        if hasattr(device_ndarray, name):
            namespace[name] = _refused(device_ndarray, name)
    namespace["__array_ufunc__"] = _array_ufunc(device_ndarray)
    namespace["__array_function__"] = _array_function(device_ndarray)
    namespace["__iter__"] = _iterate
    traced = type("TracedDeviceArray", (device_ndarray,), namespace)
    _TRACED_CLASSES.add(traced)
    return traced


def is_traced_device(array) -> bool:
    return type(array) in _TRACED_CLASSES


def traced_device_view(array):
    """A TracedDeviceArray viewing the memory of a plain device array."""
    device_ndarray = type(array)
    return device_ndarray.view(array, type=traced_class(device_ndarray))


def plain_device(array):
    """The plain device array a TracedDeviceArray views (the same memory)."""
    device_ndarray = type(array)
    if device_ndarray in _TRACED_CLASSES:
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
    return type(value) is TracedArray or type(value) in _TRACED_CLASSES


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


def _plain_of(value):
    """plain_structure for device arrays too."""
    if is_traced_device(value):
        return plain_device(value)
    if type(value) in (tuple, list):
        return type(value)(_plain_of(v) for v in value)
    if type(value) is dict:
        return {k: _plain_of(v) for k, v in value.items()}
    return plain_structure(value)


def _recorded_method(device_ndarray: type, name: str):
    unbound = getattr(device_ndarray, name)
    writing = name in WRITING_METHODS

    def method(self, *args, **kwargs):
        recorder = _recorder()
        if recorder is None:
            return unbound(plain_device(self), *_plain_of(args), **_plain_of(kwargs))
        writes = (self,) if writing else kwargs.get("out", ())
        return recorder.call(unbound, (self, *args), kwargs, writes=writes)

    method.__name__ = method.__qualname__ = name
    return method


def _recorded_property(device_ndarray: type, name: str):
    getter = operator.attrgetter(name)

    def read(self):
        recorder = _recorder()
        if recorder is None:
            return getter(plain_device(self))
        return recorder.call(getter, (self,), {}, writes=())

    return property(read)


def _value_read(device_ndarray: type, name: str, convert):
    def read(self, *args):
        recorder = _recorder()
        if recorder is None:
            return convert(plain_device(self), *args)
        return recorder.value_read(self, name, convert, args)

    read.__name__ = name
    return read


def _refused(device_ndarray: type, name: str):
    unbound = getattr(device_ndarray, name)

    def refuse(self, *args, **kwargs):
        recorder = _recorder()
        if recorder is None:
            return unbound(plain_device(self), *args, **kwargs)
        recorder.refuse(f"cupy.ndarray.{name.strip('_')}() of a captured value (a copy "
                        "to the host)")

    refuse.__name__ = name
    return refuse


def _array_ufunc(device_ndarray: type):
    def array_ufunc(self, ufunc, method, *inputs, **kwargs):
        call = ufunc if method == "__call__" else getattr(ufunc, method)
        recorder = _recorder()
        if recorder is None:
            return call(*_plain_of(inputs), **_plain_of(kwargs))
        return recorder.call(call, inputs, kwargs, writes=kwargs.get("out", ()))

    return array_ufunc


def _array_function(device_ndarray: type):
    def array_function(self, func, types_, args, kwargs):
        recorder = _recorder()
        if recorder is None:
            return func(*_plain_of(args), **_plain_of(kwargs))
        return recorder.call(func, args, kwargs, writes=kwargs.get("out", ()))

    return array_function


def _iterate(self):
    # row by row through the recorded __getitem__
    for index in range(len(self)):
        yield self[index]


# ----------------------------------------------------------------------------- the module


def device_functions(cupy) -> dict:
    """name -> a recording wrapper, for every public function and ufunc of `cupy`."""
    wrappers = {}
    for name in dir(cupy):
        if name.startswith("_") or name in NOT_RECORDED:
            continue
        value = getattr(cupy, name, None)
        if callable(value) and not isinstance(value, (type, types.ModuleType)):
            wrappers[name] = RecordedFunction(value)
    return wrappers


class RecordedFunction:
    """A CuPy function or ufunc whose calls are recorded while a capture runs; its
    attributes are the function's, and a ufunc's methods (`cupy.add.at`) record too."""

    def __init__(self, function, writes_first: bool = False):
        self._function = function
        self._writes_first = writes_first
        functools.update_wrapper(self, function, updated=())

    def __call__(self, *args, **kwargs):
        recorder = _recorder()
        if recorder is None:
            return self._function(*_plain_of(args), **_plain_of(kwargs))
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
