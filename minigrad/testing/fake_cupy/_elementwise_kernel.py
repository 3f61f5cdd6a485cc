"""`cupy.ElementwiseKernel` in the stand-in, for the kernels minigrad's compiler writes.

A kernel's operation is parsed once, at construction (_c_expression.py has the subset of
CUDA C it takes); a call evaluates it with NumPy over the whole broadcast shape, each
statement for every element at once, with CuPy's rules (cupy/_core/_kernel.pyx):

- parameters are "<dtype> <name>", the dtype a NumPy dtype name; an array argument must
  have the declared dtype, a Python or NumPy scalar is converted to it;
- inputs and given outputs broadcast to one shape; a given output must have that shape,
  missing ones are allocated; results go into the outputs' memory, so a view receives
  them, and an input is a reference to its memory, as in CUDA, so an input that is also
  an output reads what the operation stored there;
- floating errors are silent, as on a GPU;
- a call is a kernel launch: recorded, not run, while the current stream captures.
Type placeholders (`T x`), `raw` parameters, a preamble, `loop_prep`/`after_loop`,
`reduce_dims=False` and call keywords (`size`, `stream`, `block_size`) are not modeled.
The operation is rounded as CUDA rounds it under the NVRTC option `--fmad=false`; without
it, CUDA may fuse `a * b + c` into one rounding, which the stand-in cannot show.
"""
from __future__ import annotations

import re

import numpy as np

from minigrad.testing.fake_cupy._array import ndarray, unsupported
from minigrad.testing.fake_cupy._c_expression import parse_operation
from minigrad.testing.fake_cupy._capture import device_operation

_DTYPE_NAMES = ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
                "uint8", "uint16", "uint32", "uint64")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NOT_MODELED_KEYWORDS = ("loop_prep", "after_loop")


class ElementwiseKernel:
    """A user-defined elementwise kernel: `operation` runs once per element of the
    broadcast shape, each parameter name standing for that element. `in_params` and
    `out_params` map each parameter's name to its dtype."""

    def __init__(self, in_params: str, out_params: str, operation: str,
                 name: str = "kernel", reduce_dims: bool = True, preamble: str = "",
                 no_return: bool = False, return_tuple: bool = False, **kwargs):
        if not _IDENTIFIER.match(name):
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.in_params = _parameters(in_params)
        self.out_params = _parameters(out_params)
        if "i" in self.in_params or "i" in self.out_params:
            raise ValueError("Can not use 'i' as a parameter name")
        in_both = self.in_params.keys() & self.out_params.keys()
        if in_both:
            raise ValueError(f"Parameters {sorted(in_both)} are both inputs and outputs")
        _refuse_not_modeled(reduce_dims, preamble, kwargs)
        self.name = self.__name__ = name
        self.operation = operation
        self.options = tuple(kwargs.get("options", ()))
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.nargs = self.nin + self.nout
        self.no_return, self.return_tuple = no_return, return_tuple
        self._parsed = parse_operation(operation, self.in_params, self.out_params, name)

    def __repr__(self) -> str:
        return f"<ElementwiseKernel {self.name!r} (stand-in)>"

    @device_operation
    def __call__(self, *args, **kwargs):
        """Run on the inputs (then optionally the outputs); the output, a tuple when
        there are several or return_tuple is set, or None when no_return is set."""
        if kwargs:
            raise NotImplementedError(f"the CuPy stand-in's ElementwiseKernel models no "
                                      f"call keywords, got {sorted(kwargs)}")
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be "
                            f"either {self.nin} or {self.nargs} (with outputs), but given "
                            f"{len(args)}.")
        inputs = [self._input(value, name, dtype)
                  for value, (name, dtype) in zip(args, self.in_params.items())]
        given = [self._output(value, name, dtype)
                 for value, (name, dtype) in zip(args[self.nin:], self.out_params.items())]
        shape = _broadcast_shape(inputs + [output._host for output in given])
        outputs = given or [ndarray(shape, dtype) for dtype in self.out_params.values()]
        if any(output.shape != shape for output in outputs):
            raise ValueError("Out shape is mismatched")
        values = {name: np.broadcast_to(value, shape) if isinstance(value, np.ndarray)
                  else value for name, value in zip(self.in_params, inputs)}
        values.update({name: output._host for name, output in zip(self.out_params, outputs)})
        with np.errstate(all="ignore"):  # a GPU gives inf and nan silently
            self._parsed.run(values)
        if self.no_return:
            return None
        if self.nout == 1 and not self.return_tuple:
            return outputs[0]
        return tuple(outputs)

    def _input(self, value, name: str, dtype: np.dtype):
        """An input's memory (a device array of the declared dtype), or a scalar converted
        to the declared dtype."""
        if isinstance(value, ndarray):
            if value.dtype != dtype:
                raise TypeError(self._mismatch(name, dtype, value.dtype))
            return value._host
        if isinstance(value, (bool, int, float, np.generic)):
            return dtype.type(value)
        raise unsupported(value, "ElementwiseKernel")

    def _output(self, value, name: str, dtype: np.dtype) -> ndarray:
        if isinstance(value, np.ndarray):
            raise unsupported(value, "ElementwiseKernel")
        if not isinstance(value, ndarray):
            raise TypeError("Output arguments type must be cupy.ndarray")
        if value.dtype != dtype:
            raise TypeError(self._mismatch(name, dtype, value.dtype))
        return value

    def _mismatch(self, name: str, declared: np.dtype, given: np.dtype) -> str:
        return (f"Type is mismatched: kernel {self.name!r} declares {name} as {declared}, "
                f"the array is {given}")


def _parameters(text: str) -> dict:
    """'float32 x, bool mask' -> {'x': float32, 'mask': bool}, read as CuPy reads it."""
    parameters = {}
    if not text:
        return parameters
    for declaration in text.strip().split(","):
        words = declaration.split()
        if len(words) < 2:
            raise ValueError(f"Syntax error: {declaration}")
        *keywords, type_name, name = words
        unknown = [keyword for keyword in keywords if keyword not in ("raw", "_non_const")]
        if unknown:
            raise ValueError(f'Unknown keyword "{unknown[0]}"')
        if keywords:
            raise NotImplementedError(f'"{declaration.strip()}": {" and ".join(keywords)} '
                                      f"parameters are not modeled by the CuPy stand-in")
        if len(type_name) == 1:
            raise NotImplementedError(f'"{declaration.strip()}": type placeholders are not '
                                      f"modeled by the CuPy stand-in; declare a dtype")
        if type_name not in _DTYPE_NAMES:
            raise NotImplementedError(f'"{declaration.strip()}": the CuPy stand-in models '
                                      f"the dtype names {', '.join(_DTYPE_NAMES)}")
        if not _IDENTIFIER.match(name):
            raise ValueError(f'Invalid parameter name: "{name}"')
        if name in parameters:
            raise ValueError(f'Parameter "{name}" is declared twice')
        parameters[name] = np.dtype(type_name)
    return parameters


def _refuse_not_modeled(reduce_dims: bool, preamble: str, kwargs: dict) -> None:
    """NotImplementedError for what CuPy takes but the stand-in does not model; TypeError
    for keywords CuPy does not take."""
    not_modeled = [key for key in _NOT_MODELED_KEYWORDS if kwargs.get(key)]
    not_modeled += ["a preamble"] if preamble else []
    not_modeled += ["reduce_dims=False"] if not reduce_dims else []
    if not_modeled:
        raise NotImplementedError(f"the CuPy stand-in's ElementwiseKernel does not model "
                                  f"{', '.join(not_modeled)}")
    unknown = set(kwargs) - {"options", *_NOT_MODELED_KEYWORDS}
    if unknown:
        raise TypeError(f"ElementwiseKernel() got unexpected keyword arguments "
                        f"{sorted(unknown)}")


def _broadcast_shape(arguments: list) -> tuple:
    """The shape every array argument broadcasts to; scalars alone leave it undecided."""
    shapes = [argument.shape for argument in arguments if isinstance(argument, np.ndarray)]
    if not shapes:
        raise ValueError("Loop size is undecided.")
    return np.broadcast_shapes(*shapes)
