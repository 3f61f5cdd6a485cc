"""The stand-in's `ndarray`: "device memory" is a private NumPy array that only explicit
copies reach, with CuPy's rules (cupy/_core/core.pyx and _routines_indexing.pyx):

- implicit conversion to NumPy raises TypeError (`np.asarray(x)`, `np.array(x)`, a host
  array indexed by it, NumPy code that needs a host buffer); `.get()` copies out;
- an operation mixing it with a NumPy array raises TypeError ("Unsupported type");
- NumPy ufuncs and functions dispatch to the stand-in and return stand-in arrays;
- reductions and element access give 0-d arrays, never host scalars;
- integer-array indices wrap around instead of raising (a scalar index still raises);
- `x[basic] = v` copies a device array or fills with a scalar, and rejects host arrays;
- dtypes CuPy lacks (object, strings, datetimes) are rejected;
- a view's `base` is the array owning the memory, one object however often it is read;
- methods take CuPy's arguments: `clip(min, max)`, stable sorts only, no `where=` or
  `initial=`.
"""
from __future__ import annotations

import builtins
import weakref

import numpy as np

from minigrad.testing.fake_cupy import _memory
from minigrad.testing.fake_cupy._capture import D2H, H2D, device_operation, refuse_transfer
from minigrad.testing.fake_cupy._indexing import device_index
from minigrad.testing.fake_cupy._operators import _PYTHON_SCALARS, ArrayOperators

_SUPPORTED_KINDS = frozenset("biufc")
IMPLICIT_CONVERSION = ("Implicit conversion to a NumPy array is not allowed. Please use "
                       "`.get()` to construct a NumPy array explicitly.")


# NumPy keywords that no CuPy function or method takes
NUMPY_ONLY_KEYWORDS = frozenset(("where", "initial"))


def refuse_numpy_only_keywords(name: str, kwargs: dict) -> None:
    """TypeError, as Python gives for CuPy's signatures, for `where=` or `initial=`."""
    for key in NUMPY_ONLY_KEYWORDS.intersection(kwargs):
        raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")


def unsupported(value, op: str) -> TypeError:
    """CuPy's error for an operand it cannot take (a host array, a list, an object)."""
    hint = ""
    if isinstance(value, np.ndarray):
        hint = " (a host array: copy it to the device with cupy.asarray first)"
    return TypeError(f"Unsupported type {type(value)} in cupy.{op}{hint}")


def adopt(host: np.ndarray) -> ndarray:
    """A stand-in array whose device memory is `host` (no copy). A view's `base` is the
    stand-in array that owns the memory, the same object on every access, as in CuPy."""
    if host.dtype.kind not in _SUPPORTED_KINDS:
        raise ValueError(f"Unsupported dtype {host.dtype}")
    array = object.__new__(ndarray)
    array._host = host
    array._allocation = _memory.allocate(host.nbytes) if host.base is None else None
    owner = _memory.memory_owner(host)
    if owner is host:
        array._base = None
        _OWNERS[id(host)] = array
    else:
        base = _OWNERS.get(id(owner))
        array._base = adopt(owner) if base is None else base
    return array


# id of an owning host array -> the stand-in array adopting it (an entry lives as long as
# that stand-in array, which keeps the host array, and so its id, alive)
_OWNERS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def wrap(value):
    """Results of NumPy calls as device values: arrays and NumPy scalars become stand-in
    arrays (0-d for scalars, as CuPy's reductions give), sequences are wrapped inside."""
    kind = type(value)
    if kind is np.ndarray:
        return adopt(value)
    if isinstance(value, np.generic):
        return adopt(np.asarray(value))
    if kind is tuple or kind is list:
        return kind(wrap(v) for v in value)
    return value


def to_host(value, op: str):
    """Device arrays inside `value` replaced by their memory, for a NumPy call; host
    arrays are refused (CuPy never copies them implicitly)."""
    kind = type(value)
    if kind is ndarray:
        return value._host
    if isinstance(value, np.ndarray):
        raise unsupported(value, op)
    if kind is tuple or kind is list:
        return kind(to_host(v, op) for v in value)
    return value


def elementwise_operand(value, op: str):
    """An operand of an elementwise kernel: a device array, a Python or NumPy scalar."""
    if type(value) is ndarray:
        return value._host
    if isinstance(value, (_PYTHON_SCALARS, np.generic)):
        return value
    raise unsupported(value, op)


class _Flags:
    """CuPy's flags: only these three (no `writeable`, `aligned`, ...)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, host: np.ndarray):
        self.c_contiguous = host.flags.c_contiguous
        self.f_contiguous = host.flags.f_contiguous
        self.owndata = host.flags.owndata

    def __getitem__(self, name: str) -> bool:
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "OWNDATA": "owndata"}[name])


class MemoryPointer:
    """`x.data`: where the array's memory starts (a host address in the stand-in)."""

    __slots__ = ("ptr", "device_id")

    def __init__(self, ptr: int):
        self.ptr = ptr
        self.device_id = 0


class ndarray(ArrayOperators):  # noqa: N801  (cupy.ndarray)
    """A CuPy array standing in for device memory (see the module docstring); its
    operators and NumPy-named methods are ArrayOperators' (_operators.py)."""

    __slots__ = ("_host", "_allocation", "_base", "__weakref__")
    __array_priority__ = 100  # CuPy's

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise NotImplementedError("the CuPy stand-in allocates its own memory")
        host = np.empty(shape, dtype=dtype, order=order)
        if host.dtype.kind not in _SUPPORTED_KINDS:
            raise ValueError(f"Unsupported dtype {host.dtype}")
        self._host = host
        self._allocation = _memory.allocate(host.nbytes)
        self._base = None
        _OWNERS[id(host)] = self

    # ---------------------------------------------------------------- attributes
    shape = property(lambda self: self._host.shape)
    ndim = property(lambda self: self._host.ndim)
    size = property(lambda self: self._host.size)
    dtype = property(lambda self: self._host.dtype)
    strides = property(lambda self: self._host.strides)
    itemsize = property(lambda self: self._host.itemsize)
    nbytes = property(lambda self: self._host.nbytes)
    flags = property(lambda self: _Flags(self._host))
    T = property(lambda self: adopt(self._host.T))
    data = property(lambda self: MemoryPointer(self._host.ctypes.data))

    @property
    def base(self):
        """The array owning the memory this one views (None when it owns its memory)."""
        return self._base

    @property
    def device(self):
        from minigrad.testing.fake_cupy import cuda  # the stand-in's modules import one another

        return cuda.Device(0)

    @property
    def __cuda_array_interface__(self) -> dict:
        """Version 3 of the interface; `data` is the stand-in's host address."""
        host = self._host
        return {
            "shape": host.shape,
            "typestr": host.dtype.str,
            "descr": [("", host.dtype.str)],
            "strides": None if host.flags.c_contiguous else host.strides,
            "data": (host.ctypes.data if host.size else 0, False),
            "stream": 1,  # the legacy default stream, as CuPy exports it
            "version": 3,
        }

    # ---------------------------------------------------------------- copies out
    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        """A host copy (the one explicit way out of the device); refused while the
        stream (the current one unless given) is capturing."""
        if self._host.size or out is not None:
            refuse_transfer(D2H, stream)
        if out is not None:
            out[...] = self._host
            return out
        return np.array(self._host, order=order, copy=True)

    def set(self, arr: np.ndarray, stream=None) -> None:
        """Copy a host array of the same shape and dtype into this array."""
        if not isinstance(arr, np.ndarray) or arr.shape != self.shape or \
                arr.dtype != self.dtype:
            raise ValueError(f"set: expected a numpy.ndarray of shape {self.shape} and "
                             f"dtype {self.dtype}, got {getattr(arr, 'shape', type(arr))}")
        refuse_transfer(H2D, stream)
        self._host[...] = arr

    def item(self):
        refuse_transfer(D2H)
        if self._host.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self._host.item()

    def tolist(self):
        return self.get().tolist()

    def tobytes(self, order="C") -> bytes:
        return self.get().tobytes(order)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT_CONVERSION)

    def __int__(self) -> int:
        return int(self.get())

    def __float__(self) -> float:
        return float(self.get())

    def __complex__(self) -> complex:
        return complex(self.get())

    def __bool__(self) -> bool:
        refuse_transfer(D2H)
        if self._host.size > 1:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return bool(self._host.size and self._host.reshape(-1)[0])

    def __repr__(self) -> str:
        return repr(self.get())

    def __str__(self) -> str:
        return str(self.get())

    def __format__(self, spec: str) -> str:
        return format(self.get(), spec)

    __hash__ = None  # mutable, like every ndarray

    # ---------------------------------------------------------------- containers
    def __len__(self) -> int:
        if self._host.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._host.shape[0]

    def __iter__(self):
        if self._host.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._host.shape[0]))

    @device_operation
    def __getitem__(self, index):
        return adopt(self._host[device_index(index, self._host.shape)])

    @device_operation
    def __setitem__(self, index, value) -> None:
        index = device_index(index, self._host.shape)
        advanced = any(isinstance(p, np.ndarray) for p in index)
        if type(value) is ndarray:
            self._host[index] = value._host
        elif advanced:
            refuse_transfer(H2D)  # CuPy copies the value to the device first, even a scalar
            self._host[index] = np.asarray(value, dtype=self.dtype)
        else:
            self.fill_at(index, value)

    @device_operation
    def fill(self, value) -> None:
        self.fill_at((Ellipsis,), value)

    def fill_at(self, index: tuple, value) -> None:
        """CuPy's fill: a scalar only; a host array (even a list) is refused."""
        scalar = np.asarray(value, dtype=self.dtype)
        if scalar.shape != ():
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        self._host[index] = scalar

    # ---------------------------------------------------------------- methods
    @device_operation
    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return adopt(self._host.astype(dtype, order=order, casting=casting or "unsafe"))

    @device_operation
    def clip(self, min=None, max=None, out=None):  # noqa: A002  (CuPy's names)
        """Values limited to [min, max]; None leaves that side open."""
        bounds = [None if v is None else elementwise_operand(v, "clip") for v in (min, max)]
        if out is None:
            return adopt(np.clip(self._host, *bounds))
        np.clip(self._host, *bounds, out=to_host(out, "clip"))
        return out

    @device_operation
    def sort(self, axis=-1, kind=None) -> None:
        """In place, stable (CuPy's only kind: kind may be None or 'stable')."""
        self._host.sort(axis=axis, kind=_stable(kind))

    @device_operation
    def argsort(self, axis=-1, kind=None):
        """The indices of a stable sort (CuPy's only kind: kind may be None or 'stable')."""
        return adopt(self._host.argsort(axis=axis, kind=_stable(kind)))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # the stand-in's modules import one another
        from minigrad.testing.fake_cupy import _functions

        return _functions.dispatch_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        # the stand-in's modules import one another
        from minigrad.testing.fake_cupy import _functions

        return _functions.dispatch_function(func, types, args, kwargs)

    def __dlpack_device__(self) -> tuple:
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from minigrad.testing.fake_cupy import _dlpack  # the stand-in's modules import one another

        return _dlpack.export(self, stream, max_version, dl_device, copy)

    def _wrap(self, value):
        return wrap(value)

    def _operand(self, value, op: str):
        return elementwise_operand(value, op)

    def _run_host_method(self, name: str, args: tuple, kwargs: dict):
        """numpy.ndarray.<name> on the device memory, CuPy's keywords only."""
        refuse_numpy_only_keywords(name, kwargs)
        result = getattr(self._host, name)(*to_host(args, name),
                                           **{key: to_host(v, name) for key, v in kwargs.items()})
        out = kwargs.get("out")
        return out if type(out) is ndarray else wrap(result)

    def view(self, dtype=None, type=None):  # noqa: A002  (CuPy's names)
        """A view of the same memory, as `type` (a subclass of ndarray) when given;
        its `base` is the array owning the memory."""
        host = self._host.view() if dtype is None else self._host.view(dtype)
        array = adopt(host)
        if type is not None and type is not ndarray:
            if not (isinstance(type, builtins.type) and issubclass(type, ndarray)):
                raise TypeError(f"Type must be a sub-type of ndarray type, got {type!r}")
            array.__class__ = type
        return array

    @device_operation
    def take(self, indices, axis=None, out=None):
        """Like CuPy's take, out-of-range indices wrap around."""
        if type(indices) is not ndarray and np.ndim(indices):
            refuse_transfer(H2D)  # CuPy copies host indices to the device
        indices = indices._host if type(indices) is ndarray else np.asarray(indices)
        result = np.take(self._host, indices, axis, mode="wrap")
        if out is None:
            return adopt(result)
        out[...] = adopt(result)
        return out


def _stable(kind) -> str:
    if kind is not None and kind != "stable":
        raise ValueError("kind can only be None or 'stable'")
    return "stable"
