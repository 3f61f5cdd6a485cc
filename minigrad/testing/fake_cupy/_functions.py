"""The stand-in's functions: NumPy's, run on device memory, with CuPy's operand rules.

Only names CuPy has are listed; the package's `__getattr__` raises AttributeError for any
other, so code cannot lean on a NumPy function that CuPy lacks. Three kinds:
- ufuncs (`cupy.add`, `cupy.exp`, ...): device arrays, Python and NumPy scalars only;
  `.at`, `.reduce`, `.accumulate`, `.outer` as far as CuPy implements them;
- functions (`cupy.sum`, `cupy.concatenate`, ...): device arrays (also inside lists);
  a host array anywhere is refused;
- copies from the host (`cupy.asarray`, `cupy.array`): host data, or a list of device
  arrays of one shape (never the two mixed).
Functions that need a device array (`ascontiguousarray`, `clip`, `sort`, ...) refuse
anything else, and no function takes NumPy's `where=` or `initial=`.
Each function that runs a kernel is a `device_operation` (recorded while the current
stream captures); `empty` and `empty_like` only allocate. Copies from the host, and the
functions whose result's shape depends on the values (CuPy reads a count back), are
refused during a capture.
"""
from __future__ import annotations

import functools

import numpy as np

from minigrad.testing.fake_cupy._array import (
    IMPLICIT_CONVERSION,
    adopt,
    elementwise_operand,
    ndarray,
    refuse_numpy_only_keywords,
    to_host,
    unsupported,
    wrap,
)
from minigrad.testing.fake_cupy._capture import (
    D2H,
    H2D,
    capturing,
    device_operation,
    refuse_transfer,
)
from minigrad.testing.fake_cupy._indexing import device_index

UFUNC_NAMES = (
    "abs absolute add arccos arccosh arcsin arcsinh arctan arctan2 arctanh bitwise_and "
    "bitwise_not bitwise_or bitwise_xor cbrt ceil copysign cos cosh deg2rad degrees divide "
    "equal exp exp2 expm1 fabs floor floor_divide fmax fmin fmod greater greater_equal "
    "hypot invert isfinite isinf isnan left_shift less less_equal log log10 log1p log2 "
    "logaddexp logaddexp2 logical_and logical_not logical_or logical_xor matmul maximum "
    "minimum mod multiply negative nextafter not_equal positive power rad2deg radians "
    "reciprocal remainder right_shift rint sign signbit sin sinh sqrt square subtract tan "
    "tanh true_divide trunc"
).split()

FUNCTION_NAMES = (
    "all allclose amax amin any append arange argmax argmin argpartition argwhere "
    "around "
    "array_equal array_split atleast_1d atleast_2d atleast_3d average broadcast_arrays "
    "broadcast_to clip column_stack concatenate count_nonzero cumprod cumsum diag diagonal "
    "diff dot einsum empty empty_like expand_dims eye flatnonzero flip fliplr flipud full "
    "full_like hstack identity inner isclose kron linspace max mean median meshgrid min "
    "may_share_memory moveaxis nan_to_num nanmax nanmean nanmin nansum nonzero ones "
    "ones_like outer pad partition prod ptp ravel repeat reshape roll rollaxis round "
    "searchsorted shape shares_memory size split squeeze stack std sum swapaxes "
    "take_along_axis tensordot tile trace transpose tri "
    "tril triu unique var vstack where zeros zeros_like"
).split()

FROM_HOST_NAMES = ("array", "asarray", "asanyarray")

# functions that allocate without writing (no kernel)
ALLOCATING_NAMES = frozenset(("empty", "empty_like"))
# functions whose result's shape depends on the values: CuPy reads a count back to the host
SHAPE_FROM_VALUES = frozenset(("nonzero", "argwhere", "flatnonzero", "unique"))
# functions that give a host bool in the stand-in (a 0-d array in CuPy)
HOST_RESULT_NAMES = frozenset(("allclose", "array_equal"))

# NumPy's own objects that CuPy re-exports unchanged
NUMPY_NAMES = (
    "bool_ byte can_cast common_type complex64 complex128 complexfloating double dtype e "
    "finfo float16 float32 float64 floating generic half iinfo inexact inf int8 int16 "
    "int32 int64 int_ intc integer intp issubdtype longlong nan newaxis number pi "
    "promote_types result_type short signedinteger single ubyte uint uint8 uint16 uint32 "
    "uint64 uintc uintp unsignedinteger ushort"
).split()

# ufunc.at in CuPy: the scatter kernels and the dtypes each supports
_SCATTER_DTYPES = {
    "add": ("int32", "int64", "float16", "float32", "float64", "uint32", "uint64"),
    "subtract": ("int32", "uint32"),
    "maximum": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
    "minimum": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
}


# the keywords cupy.ufunc.__call__ takes besides out (anything else: TypeError)
_UFUNC_KEYWORDS = frozenset(("dtype", "casting"))
# the order in which ufunc.at's "atomic" updates land: unseeded, like a GPU's threads
_ATOMICS_ORDER = np.random.default_rng()


class ufunc:  # noqa: N801  (cupy.ufunc)
    """An elementwise kernel: `numpy_ufunc` on device memory, CuPy's operand rules."""

    def __init__(self, name: str, numpy_ufunc, compute=None):
        self.__name__ = self.name = name
        self._numpy = numpy_ufunc
        self._compute = compute or numpy_ufunc
        self.nin, self.nout = numpy_ufunc.nin, numpy_ufunc.nout
        self.__doc__ = f"cupy.{name} in the stand-in: numpy.{name} on device memory."

    def __repr__(self) -> str:
        return f"<ufunc 'cupy_{self.name}' (stand-in)>"

    @device_operation
    def __call__(self, *args, out=None, **kwargs):
        if set(kwargs) - _UFUNC_KEYWORDS:  # CuPy's message; NumPy's where= is one of them
            raise TypeError(f"Wrong arguments {kwargs}")
        operands = [elementwise_operand(a, self.name) for a in args]
        if out is not None:
            if isinstance(out, tuple):
                (out,) = out
            if type(out) is not ndarray:
                raise TypeError(f"cupy.{self.name}: out must be a cupy.ndarray, got "
                                f"{type(out)}")
            self._compute(*operands, out=out._host, **kwargs)
            return out
        return wrap(self._compute(*operands, **kwargs))

    @device_operation
    def at(self, a, indices, b=None) -> None:
        """In place at `indices`; out-of-range indices wrap, as in CuPy's scatter. CuPy
        updates with atomics, so a position that repeats takes its values in the order
        the GPU's threads happen to finish: the stand-in applies them in a new random
        order on every call, and float sums into repeated positions differ from run to
        run here as they do on a GPU."""
        supported = _SCATTER_DTYPES.get(self.name)
        if supported is None:
            raise NotImplementedError(f"`cupy_{self.name}.at` is not supported yet")
        if type(a) is not ndarray:
            raise unsupported(a, f"{self.name}.at")
        if type(b) is not ndarray:
            refuse_transfer(H2D)  # CuPy's scatter copies a host value to the device first
        values = b._host if type(b) is ndarray else np.asarray(b, dtype=a.dtype)
        if values.astype(a.dtype, copy=False).dtype.name not in supported:
            raise TypeError(f"cupy.{self.name}.at only supports "
                            f"{', '.join(supported)} as data type")
        host = a._host
        positions = np.arange(host.size).reshape(host.shape)[device_index(indices, a.shape)]
        values = np.broadcast_to(values, positions.shape).reshape(-1)
        order = _ATOMICS_ORDER.permutation(positions.size)
        self._numpy.at(host, np.unravel_index(positions.reshape(-1)[order], host.shape),
                       values[order])

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        reductions = {"add": "sum", "multiply": "prod"}
        if self.name not in reductions:
            raise NotImplementedError(f"`cupy_{self.name}.reduce` is not supported yet")
        return FUNCTIONS[reductions[self.name]](array, axis, dtype, out, keepdims)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        accumulations = {"add": "cumsum", "multiply": "cumprod"}
        if self.name not in accumulations:
            raise NotImplementedError(f"`cupy_{self.name}.accumulate` is not supported yet")
        return FUNCTIONS[accumulations[self.name]](array, axis, dtype, out)

    def outer(self, a, b, **kwargs):
        a, b = FUNCTIONS["asarray"](a), FUNCTIONS["asarray"](b)
        return self(a.reshape(a.shape + (1,) * b.ndim), b.reshape((1,) * a.ndim + b.shape),
                    **kwargs)


def _device_function(name: str, numpy_function):
    """numpy_function on device memory; host arrays among the arguments are refused."""

    @functools.wraps(numpy_function)
    def function(*args, **kwargs):
        refuse_numpy_only_keywords(name, kwargs)
        if name in SHAPE_FROM_VALUES:
            refuse_transfer(D2H)
        if name in HOST_RESULT_NAMES and capturing():
            raise NotImplementedError(f"cupy.{name} gives a host bool in the CuPy stand-in "
                                      "(a 0-d array in CuPy): a capture cannot record it")
        result = numpy_function(*to_host(args, name),
                                **{key: to_host(v, name) for key, v in kwargs.items()})
        out = kwargs.get("out")
        return out if type(out) is ndarray else wrap(result)

    function.__doc__ = f"cupy.{name} in the stand-in: numpy.{name} on device memory."
    return function if name in ALLOCATING_NAMES else device_operation(function)


@device_operation
def _where(condition, x=None, y=None):
    """cupy.where: elementwise over device arrays and scalars (one argument: nonzero)."""
    if x is None and y is None:
        return FUNCTIONS["nonzero"](condition)
    operands = [elementwise_operand(v, "where") for v in (condition, x, y)]
    return wrap(np.where(*operands))


def clip(a, a_min, a_max, out=None):
    """cupy.clip: both bounds are required arguments (None for no bound), no keywords."""
    if type(a) is not ndarray:
        raise unsupported(a, "clip")
    return a.clip(a_min, a_max, out)


def _copy_from_host(name: str, numpy_function):
    """cupy.array, cupy.asarray: host data is copied to the device (device data is not).
    A (nested) list holding device arrays must hold only device arrays, all of one shape
    (CuPy concatenates them); mixed with host values it is converted through NumPy, which
    refuses the device arrays (core.pyx: _array_info_from_nested_sequence)."""

    @device_operation
    def function(a, dtype=None, *args, **kwargs):
        if type(a) is ndarray:
            host = numpy_function(a._host, dtype, *args, **kwargs)
            return a if host is a._host else adopt(host)
        if type(a) in (list, tuple) and _holds_device_array(a):
            stacked = _stacked_device_arrays(a)
            if stacked is None:
                raise TypeError(IMPLICIT_CONVERSION)
            return adopt(numpy_function(stacked, dtype, *args, **kwargs))
        refuse_transfer(H2D)
        host = np.array(a, dtype=dtype, copy=True)
        return adopt(numpy_function(host, None, *args, **kwargs))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"cupy.{name}: host data is copied to the device."
    return function


def _holds_device_array(value) -> bool:
    if type(value) is ndarray:
        return True
    return type(value) in (list, tuple) and any(_holds_device_array(v) for v in value)


def _stacked_device_arrays(value):
    """The memory of a nest of device arrays of one shape, stacked as CuPy concatenates
    them (dtypes promoted), or None when the nest holds anything else or is ragged."""
    if type(value) is ndarray:
        return value._host
    if type(value) not in (list, tuple) or not value:
        return None
    parts = [_stacked_device_arrays(v) for v in value]
    if any(p is None for p in parts) or len({p.shape for p in parts}) != 1:
        return None
    return np.stack(parts).astype(np.result_type(*parts), copy=False)


def _as_layout(name: str, order: str):
    """cupy.ascontiguousarray / asfortranarray: a device array only (a Cython-typed
    argument: anything else is a TypeError); a 0-d array becomes 1-d, as in NumPy."""

    @device_operation
    def function(a, dtype=None):
        if type(a) is not ndarray:
            raise TypeError(f"Argument 'a' has incorrect type (expected cupy.ndarray, got "
                            f"{type(a).__name__})")
        host = np.array(a._host, dtype=dtype, order=order, copy=None, ndmin=1)
        return a if host is a._host else adopt(host)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"cupy.{name}: device arrays only."
    return function


def sort(a, axis=-1, kind=None):
    """cupy.sort: a sorted copy, stable (CuPy's only kind: None or 'stable')."""
    if type(a) is not ndarray:
        raise unsupported(a, "sort")
    result = a.copy()
    result.sort(axis=axis, kind=kind)
    return result


def argsort(a, axis=-1, kind=None):
    """cupy.argsort: the indices of a stable sort (CuPy's only kind: None or 'stable')."""
    if type(a) is not ndarray:
        raise unsupported(a, "argsort")
    return a.argsort(axis=axis, kind=kind)


def asnumpy(a, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
    """A host copy of a device array; host values pass through np.asarray."""
    if type(a) is ndarray:
        return a.get(stream=stream, order=order, out=out)
    return np.asarray(a, order=order)


def get_array_module(*args):
    """The stand-in module when any argument is a device array, else numpy."""
    from minigrad.testing import fake_cupy  # the stand-in's modules import one another

    return fake_cupy if any(type(a) is ndarray for a in args) else np


def _take(a, indices, axis=None, out=None):
    """cupy.take: the array's take, whose out-of-range indices wrap around as CuPy's do."""
    if type(a) is not ndarray:
        raise TypeError(f"Unsupported type {type(a)}")
    return a.take(indices, axis, out)


def _build() -> dict:
    table = {name: ufunc(name, getattr(np, name)) for name in UFUNC_NAMES}
    table.update({name: _device_function(name, getattr(np, name)) for name in FUNCTION_NAMES})
    table.update({name: _copy_from_host(name, getattr(np, name)) for name in FROM_HOST_NAMES})
    table.update({name: getattr(np, name) for name in NUMPY_NAMES})
    table.update(where=_where, clip=clip, take=_take, asnumpy=asnumpy,
                 get_array_module=get_array_module, ndarray=ndarray, ufunc=ufunc,
                 ascontiguousarray=_as_layout("ascontiguousarray", "C"),
                 asfortranarray=_as_layout("asfortranarray", "F"),
                 sort=sort, argsort=argsort)
    return table


FUNCTIONS = _build()


# ----------------------------------------------------------------------------- dispatch
# NumPy calls these for np.<ufunc>(x) and np.<function>(x) on a device array.


def dispatch_ufunc(numpy_ufunc, method: str, inputs: tuple, kwargs: dict):
    """CuPy's __array_ufunc__: the same-named CuPy ufunc (or cupyx.scipy.special one);
    NotImplemented for a ufunc CuPy lacks or an operand it cannot take."""
    from minigrad.testing import fake_cupyx  # the stand-in's modules import one another

    name = numpy_ufunc.__name__
    device_ufunc = FUNCTIONS.get(name) or getattr(fake_cupyx.scipy.special, name, None)
    if not isinstance(device_ufunc, ufunc):
        return NotImplemented
    for value in inputs + tuple(kwargs.get("out", ())):
        if not isinstance(value, (ndarray, np.ndarray, np.generic, bool, int, float, complex)):
            return NotImplemented
    if "out" in kwargs:
        (kwargs["out"],) = kwargs["out"]
    target = device_ufunc if method == "__call__" else getattr(device_ufunc, method, None)
    if target is None:
        return NotImplemented
    return target(*inputs, **kwargs)


def dispatch_function(numpy_function, types, args: tuple, kwargs: dict):
    """CuPy's __array_function__: the same-named CuPy function, else NotImplemented
    (NumPy then raises TypeError)."""
    from minigrad.testing import fake_cupy  # the stand-in's modules import one another

    try:
        module = functools.reduce(getattr, numpy_function.__module__.split(".")[1:],
                                  fake_cupy)
        device_function = getattr(module, numpy_function.__name__)
    except AttributeError:
        return NotImplemented
    if not all(issubclass(t, (ndarray, np.ndarray)) for t in types):
        return NotImplemented
    return device_function(*args, **kwargs)
