"""The operators of the stand-in's ndarray (`x + y`, `x < y`, `-x`, `x += y`, with CuPy's
rule for a foreign operand) and its methods named after NumPy's (`x.sum()`,
`x.reshape()`, ...), run on the device memory `_host`. ArrayOperators holds them;
_array.ndarray inherits them and gives what they are written with: `_wrap(value)` (a
NumPy result as device values), `_operand(value, op)` (an elementwise operand, host
arrays refused) and `_run_host_method(name, args, kwargs)`. Each is a kernel of the
stand-in (`device_operation`: recorded while the current stream captures)."""
from __future__ import annotations

import numpy as np

from minigrad.testing.fake_cupy._capture import D2H, device_operation, refuse_transfer

_PYTHON_SCALARS = (bool, int, float, complex)  # operands CuPy takes besides arrays

class ArrayOperators:
    """The operators and NumPy-named methods of the stand-in's ndarray (see the module
    docstring); the loops below this class fill it from the tables."""

    __slots__ = ()

    def _defers_to(self, other) -> bool:
        """CuPy's rule for `x + other` with a foreign `other`: hand over to other's
        reflected operator when it opts out of ufuncs or outranks CuPy's
        __array_priority__ (as a minigrad Tensor does)."""
        if isinstance(other, (type(self), np.ndarray, np.generic, *_PYTHON_SCALARS)):
            return False
        handler = getattr(type(other), "__array_ufunc__", _MISSING)
        if handler is not _MISSING:
            return handler is None
        return getattr(other, "__array_priority__", 0) > self.__array_priority__


_MISSING = object()


def _binary_operator(numpy_ufunc, reflected: bool):
    name = numpy_ufunc.__name__

    @device_operation
    def operator(self, other):
        if self._defers_to(other):
            return NotImplemented
        other = self._operand(other, name)
        if reflected:
            return self._wrap(numpy_ufunc(other, self._host))
        return self._wrap(numpy_ufunc(self._host, other))

    return operator


def _inplace_operator(numpy_ufunc):
    name = numpy_ufunc.__name__

    @device_operation
    def operator(self, other):
        if self._defers_to(other):
            return NotImplemented
        numpy_ufunc(self._host, self._operand(other, name), out=self._host)
        return self

    return operator


def _unary_operator(numpy_ufunc):
    return device_operation(lambda self: self._wrap(numpy_ufunc(self._host)))


def _host_method(name: str):
    @device_operation
    def method(self, *args, **kwargs):
        if name in _SHAPE_FROM_VALUES:
            refuse_transfer(D2H)  # CuPy reads the count of results back to the host
        return self._run_host_method(name, args, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"cupy.ndarray.{name} in the stand-in (numpy.ndarray.{name})."
    return method


_BINARY_OPERATORS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "matmul": np.matmul,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "lshift": np.left_shift, "rshift": np.right_shift,
}
_COMPARISONS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                "gt": np.greater, "ge": np.greater_equal}
_UNARY_OPERATORS = {"neg": np.negative, "pos": np.positive, "abs": np.absolute,
                    "invert": np.invert}
# methods whose result's shape depends on the values
_SHAPE_FROM_VALUES = frozenset(("nonzero",))
# NumPy's methods of the same name, run on the device memory
_METHOD_NAMES = (
    "all any argmax argmin argpartition conj copy cumprod cumsum diagonal dot "
    "flatten max mean min nonzero partition prod ravel repeat reshape round squeeze "
    "std sum swapaxes trace transpose var view"
).split()

for _name, _ufunc in _BINARY_OPERATORS.items():
    setattr(ArrayOperators, f"__{_name}__", _binary_operator(_ufunc, reflected=False))
    setattr(ArrayOperators, f"__r{_name}__", _binary_operator(_ufunc, reflected=True))
    setattr(ArrayOperators, f"__i{_name}__", _inplace_operator(_ufunc))
for _name, _ufunc in _COMPARISONS.items():
    setattr(ArrayOperators, f"__{_name}__", _binary_operator(_ufunc, reflected=False))
for _name, _ufunc in _UNARY_OPERATORS.items():
    setattr(ArrayOperators, f"__{_name}__", _unary_operator(_ufunc))
for _name in _METHOD_NAMES:
    setattr(ArrayOperators, _name, _host_method(_name))
