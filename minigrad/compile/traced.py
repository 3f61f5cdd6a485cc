"""TracedArray: the NumPy array every tensor holds while mg.compile captures a step.

It is an ndarray subclass, so code written for arrays runs on it unchanged; what it adds
is that each operation on it reports to the recorder that is capturing (capture.py):

- NumPy's ufuncs (`a + b`, `a += b`, `a.sum()`, `np.exp(a)`) through `__array_ufunc__`,
  and NumPy's functions (`np.where`, `np.concatenate`, ...) through `__array_function__`;
- the ndarray methods that bypass both (`reshape`, `astype`, `a[i]`, `a[i] = v`, ...),
  listed in RECORDED_METHODS and wrapped here;
- reads of its values into Python (`bool(a)`, `float(a)`, `a.item()`), which the recorder
  turns into checks of the value at replay, and printing, which it refuses.

Outside a capture (or in another thread, or inside an op the recorder treats as one
step) a TracedArray computes like the plain array it views and returns plain arrays.
"""
from __future__ import annotations

import operator
import threading

import numpy as np

# ndarray methods that compute (or view, or write) without going through a ufunc or a
# NumPy function: each call is recorded as one step
RECORDED_METHODS = (
    "__getitem__", "__setitem__", "__copy__", "__deepcopy__", "all", "any", "argmax",
    "argmin", "argpartition", "argsort", "astype", "choose", "clip", "compress", "conj",
    "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot", "fill", "flatten", "max",
    "mean", "min", "nonzero", "partition", "prod", "put", "ravel", "repeat", "reshape",
    "round", "searchsorted", "sort", "squeeze", "std", "sum", "swapaxes", "take", "trace",
    "transpose", "var", "view",
)
# the methods among them that write into the array they are called on
WRITING_METHODS = frozenset(("__setitem__", "fill", "put", "sort", "partition"))
# NumPy's (and CuPy's) functions that write into their first argument
WRITING_FUNCTIONS = frozenset(("copyto", "put_along_axis", "put", "place", "putmask",
                               "fill_diagonal"))
RECORDED_PROPERTIES = ("T", "mT", "real", "imag")
# reads of an array's values into Python: checked again at replay
VALUE_READS = {"__bool__": bool, "__int__": int, "__float__": float, "__index__": operator.index,
               "__complex__": complex, "item": np.ndarray.item, "tolist": np.ndarray.tolist}
# what no replay can redo (it leaves the step): the capture stops there
REFUSED = ("__repr__", "__str__", "__format__", "__contains__", "tobytes", "tofile", "dump",
           "dumps", "__reduce__", "__reduce_ex__", "resize", "setfield")


class _Active(threading.local):
    """The recorder of this thread while it captures (None otherwise)."""

    recorder = None


ACTIVE = _Active()


def plain(array: np.ndarray) -> np.ndarray:
    """The plain ndarray a TracedArray views (the same memory); for a traced CuPy array,
    the plain CuPy array (traced_device.py)."""
    if isinstance(array, np.ndarray):
        return np.ndarray.view(array, np.ndarray)
    from minigrad.compile import traced_device  # which imports this module

    return traced_device.plain_device(array)


def plain_structure(value):
    """`value` with every traced array (NumPy or CuPy) inside tuples, lists and dicts made
    plain."""
    if type(value) in TRACED_TYPES:
        return plain(value)
    if type(value) in (tuple, list):
        return type(value)(plain_structure(v) for v in value)
    if type(value) is dict:
        return {k: plain_structure(v) for k, v in value.items()}
    return value


def active_recorder():
    """The recorder to report to, or None: no capture in this thread, or inside a step."""
    recorder = ACTIVE.recorder
    if recorder is None or recorder.depth:
        return None
    return recorder


class TracedArray(np.ndarray):
    """An array whose operations are recorded while a capture runs (module docstring)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        call = ufunc if method == "__call__" else getattr(ufunc, method)
        recorder = active_recorder()
        if recorder is None:
            return call(*plain_structure(inputs), **plain_structure(kwargs))
        written = inputs[:1] if method == "at" else kwargs.get("out", ())  # np.add.at(x, ...)
        return recorder.call(call, inputs, kwargs, writes=written)

    def __array_function__(self, func, types, args, kwargs):
        recorder = active_recorder()
        if recorder is None:
            return func(*plain_structure(args), **plain_structure(kwargs))
        written = kwargs.get("out", ())
        if func.__name__ in WRITING_FUNCTIONS and getattr(np, func.__name__) is func:
            written = args[:1]
        return recorder.call(func, args, kwargs, writes=written)

    def __iter__(self):
        # NumPy's own iteration makes views no hook sees: index row by row instead
        for index in range(len(self)):
            yield self[index]


# the traced array types: TracedArray and the CuPy ones of traced_device.py
TRACED_TYPES: set[type] = {TracedArray}

# The wrappers below make the traced methods of TracedArray here, and of the CuPy traced
# arrays in traced_device.py; `array_type` is the plain class whose method is wrapped.


def recorded_method(array_type: type, name: str, writing: bool):
    """A method recorded as one step (`writing`: it writes into the array itself)."""
    unbound = getattr(array_type, name)

    def method(self, *args, **kwargs):
        recorder = active_recorder()
        if recorder is None:
            return unbound(plain(self), *plain_structure(args), **plain_structure(kwargs))
        writes = (self,) if writing else kwargs.get("out", ())
        return recorder.call(unbound, (self, *args), kwargs, writes=writes)

    method.__name__ = method.__qualname__ = name
    return method


def recorded_property(name: str):
    getter = operator.attrgetter(name)

    def read(self):
        recorder = active_recorder()
        if recorder is None:
            return getter(plain(self))
        return recorder.call(getter, (self,), {}, writes=())

    return property(read)


def value_read(name: str, convert):
    """A read of the array's values into Python: checked again at each replay."""
    def read(self, *args):
        recorder = active_recorder()
        if recorder is None:
            return convert(plain(self), *args)
        return recorder.value_read(self, name, convert, args)

    read.__name__ = name
    return read


def refused(array_type: type, name: str, what: str):
    """A method no replay can redo: calling it stops the capture, saying `what` it is."""
    unbound = getattr(array_type, name)

    def refuse(self, *args, **kwargs):
        recorder = active_recorder()
        if recorder is None:
            return unbound(plain(self), *args, **kwargs)
        recorder.refuse(what)

    refuse.__name__ = name
    return refuse


for _name in RECORDED_METHODS:
    setattr(TracedArray, _name, recorded_method(np.ndarray, _name, _name in WRITING_METHODS))
for _name in RECORDED_PROPERTIES:
    setattr(TracedArray, _name, recorded_property(_name))
for _name, _convert in VALUE_READS.items():
    setattr(TracedArray, _name, value_read(_name, _convert))
for _name in REFUSED:
    setattr(TracedArray, _name,
            refused(np.ndarray, _name, f"ndarray.{_name.strip('_')}() of a captured value"))
