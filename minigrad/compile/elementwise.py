"""Which recorded steps are elementwise, and what each computes, as fusion.py reads them.

A step is elementwise when each element of its result depends only on the elements at the
same (broadcast) position of its operands. Only the operations whose generated kernel
gives NumPy's bits are listed: addition, subtraction, multiplication, division and
negation are exactly rounded IEEE operations in NumPy's loops and in LLVM's alike (so is a
power by a small integer, which kernels/power.py computes as those products), and
comparisons, selections (where, ReLU's clip, maximum, minimum) and casts between bool and
the float types are exact. Transcendental functions (exp, tanh, erf, log) are left to
NumPy: its SIMD code and Numba's libm may differ in the last bit.

One op reads its operand at another position: "pad", the adjoint of slicing (IndexAdd
of a box of unit-step slices into zeros, as the backward of `split`, `chunk` and `x[a:b]`
makes it). Each element is the operand's element shifted by the box's start inside the
box, and 0 outside it, which is what eager's zeros with the operand copied in hold.

Values are float32, float64 or bool; integer and float16 arithmetic stays with NumPy.
A GPU plan records CuPy's functions (`cupy.add`, `cupy.ndarray.astype`): each is read as
the NumPy function of its name.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from minigrad.backend.device import cupy_or_none
from minigrad.compile.steps import Call, Ref, Unit
from minigrad.kernels.mode import get_mode
from minigrad.kernels.power import is_small_integer
from minigrad.ops.arithmetic import Add, Div, Mul, Neg, PowScalar, Sub
from minigrad.ops.cast import ToDtype
from minigrad.ops.dropout import MaskedScale
from minigrad.ops.indexing import IndexAdd
from minigrad.ops.select import Maximum, Where
from minigrad.ops.unary import Relu

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
VALUES = (*FLOATS, np.dtype(np.bool_))
# Python integers are exact in float32 up to here: larger ones stay with NumPy
_EXACT_INTEGER = 2 ** 24

# op -> its kind: "arithmetic" computes in the result's dtype (NumPy casts each operand to
# it), "comparison" in the operands' common dtype and gives bools
KINDS = {
    "add": "arithmetic", "sub": "arithmetic", "mul": "arithmetic", "div": "arithmetic",
    "neg": "arithmetic", "relu": "arithmetic", "maximum": "arithmetic",
    "minimum": "arithmetic", "masked_scale": "arithmetic", "pow": "arithmetic",
    "gt": "comparison", "ge": "comparison", "lt": "comparison", "le": "comparison",
    "eq": "comparison", "ne": "comparison",
    "where": "selection", "cast": "cast", "pad": "copy",
}
UNIT_OPS = {Add: "add", Sub: "sub", Mul: "mul", Div: "div", Neg: "neg", Relu: "relu",
            Maximum: "maximum", Where: "where", MaskedScale: "masked_scale",
            ToDtype: "cast", PowScalar: "pow", IndexAdd: "pad"}
CALL_OPS = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
            np.negative: "neg", np.maximum: "maximum", np.minimum: "minimum",
            np.greater: "gt", np.greater_equal: "ge", np.less: "lt", np.less_equal: "le",
            np.equal: "eq", np.not_equal: "ne", np.where: "where",
            np.ndarray.astype: "cast"}
ARITY = {"neg": 1, "relu": 1, "cast": 1, "where": 3, "masked_scale": 3, "pad": 1}


@dataclass(frozen=True)
class Constant:
    """A number among an op's operands: a Python number (NumPy casts it to the other
    operands' dtype) or, with `dtype`, a NumPy scalar or a 0-d array made from one."""

    value: float | int | bool
    dtype: np.dtype | None = None


@dataclass(frozen=True)
class Node:
    """One elementwise step: `out = op(*operands)`, operands slots (int) or Constants."""

    op: str
    operands: tuple
    out: int
    label: str  # the recorded step's name ("Mul.forward", "np.add")
    box: tuple = ()  # "pad": (start, stop) of the operand's box along each dim of `out`


def as_node(step, arrays: dict) -> Node | None:
    """The step as a Node, or None where it is not one the kernels reproduce bit for bit.
    `arrays`: what each slot's array was during the capture (ArrayInfo)."""
    if isinstance(step, Unit):
        node = _unit_node(step)
    elif isinstance(step, Call) and type(step) is Call:
        node = _call_node(step)
    else:
        return None
    if node is None or not _dtypes_fit(node, arrays):
        return None
    return node


def numpy_function(fn):
    """The NumPy function a recorded function stands for: CuPy's of the same name
    (cupy.add, cupy.ndarray.astype, cupy.asarray) and the operators of cupy.ndarray
    (`a + b` is cupy.ndarray.__add__) map to NumPy's, any other is itself."""
    return _device_twins().get(id(fn), fn)


# operators of cupy.ndarray, as the NumPy function each calls with (self, other)
_OPERATORS = {"__add__": np.add, "__sub__": np.subtract, "__mul__": np.multiply,
              "__truediv__": np.true_divide, "__neg__": np.negative,
              "__gt__": np.greater, "__ge__": np.greater_equal, "__lt__": np.less,
              "__le__": np.less_equal, "__eq__": np.equal, "__ne__": np.not_equal}


def _device_twins() -> dict:
    """id of a CuPy function -> the NumPy function of its name (empty without CuPy)."""
    cupy = cupy_or_none()
    if cupy is None:
        return {}
    twins = _TWINS.get(id(cupy))
    if twins is None:
        twins = {}
        for function in (*CALL_OPS, np.asarray):
            owner = cupy.ndarray if function is np.ndarray.astype else cupy
            device_function = getattr(owner, function.__name__, None)
            if device_function is not None:
                twins[id(device_function)] = function
        for name, function in _OPERATORS.items():
            twins[id(getattr(cupy.ndarray, name))] = function
        _TWINS[id(cupy)] = twins
    return twins


_TWINS: dict[int, dict] = {}  # id of a cupy module -> its functions' NumPy twins


def constant_of(step) -> Constant | None:
    """`np.asarray(number, dtype=...)`, as the ops make their scalar operands: the
    Constant it stands for, or None for any other step."""
    if not (isinstance(step, Call) and type(step) is Call
            and numpy_function(step.fn) is np.asarray):
        return None
    if len(step.args) != 1 or set(step.kwargs) != {"dtype"} or not isinstance(step.out, Ref):
        return None
    value, dtype = step.args[0], np.dtype(step.kwargs["dtype"])
    if _number(value) is None or dtype not in FLOATS:
        return None
    return Constant(value, dtype)


def is_identity(step) -> bool:
    """`s = np.asarray(s)`: the engine making sure a gradient is an array, which a slot
    always is at replay."""
    return (isinstance(step, Call) and type(step) is Call
            and numpy_function(step.fn) is np.asarray and not step.kwargs
            and len(step.args) == 1 and isinstance(step.args[0], Ref)
            and step.out == step.args[0])


def compute_dtype(node: Node, arrays: dict) -> np.dtype:
    """The dtype NumPy computes the op in: the operands' common dtype for a comparison
    (Python numbers adapt to the arrays), the result's for every other op."""
    if KINDS[node.op] == "comparison":
        return np.result_type(*(_dtype_or_value(o, arrays) for o in node.operands))
    return arrays[node.out].dtype


# the ops whose source is the same in Python and in C: infix operators, negation, and a
# cast (its operand is already cast by operand_text)
INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "gt": ">", "ge": ">=",
         "lt": "<", "le": "<=", "eq": "==", "ne": "!="}


def infix_expression(op: str, values: list) -> str | None:
    """The source of `op` on operand texts `values` where Python and C write it alike,
    else None."""
    if op in INFIX:
        return f"{values[0]} {INFIX[op]} {values[1]}"
    if op == "neg":
        return f"-{values[0]}"
    if op == "cast":
        return values[0]
    return None


def operand_text(operand, dtype: np.dtype, names: dict, arrays: dict, literal, cast):
    """An operand as kernel source computing in `dtype`: its variable, through
    `cast(name, dtype)` where its dtype differs, or a constant through `literal(value,
    dtype)` (a typed number rounded to its own dtype first). `literal` may return None
    (a constant the kernel cannot write), and so then does this."""
    if isinstance(operand, Constant):
        value = operand.value
        if operand.dtype is not None:
            value = operand.dtype.type(value)
        return literal(value, dtype)
    name = names[operand]
    return name if operand_dtype(operand, arrays) == dtype else cast(name, dtype)


def operand_dtype(operand, arrays: dict) -> np.dtype | None:
    """A slot's dtype, a typed constant's dtype, or None for a Python number."""
    if isinstance(operand, Constant):
        return operand.dtype
    return arrays[operand].dtype


def _dtype_or_value(operand, arrays: dict):
    if isinstance(operand, Constant):
        return operand.value if operand.dtype is None else operand.dtype
    return arrays[operand].dtype


def _unit_node(step: Unit) -> Node | None:
    op = UNIT_OPS.get(step.cls)
    if op is None or step.saved or step.attributes:
        return None
    args, params = step.args, dict(step.params)
    label = f"{step.cls.__name__}.forward"
    if op == "where":
        condition = params.pop("condition", None)
        operands = (condition, *args)
    elif op == "cast":  # the result's dtype is the target (checked in _dtypes_fit)
        params.pop("dtype", None)
        operands = args
    elif op == "masked_scale":
        mask, scale = params.pop("mask", None), params.pop("scale", 1.0)
        if _number(scale) is None:
            return None
        operands = (*args, mask, Constant(scale))
    elif op == "pow":  # x ** p for the p that kernels/power.py computes as products
        exponent = params.pop("exponent", None)
        if not is_small_integer(exponent) or get_mode() == "numpy":  # numpy: NumPy's pow
            return None
        operands = (*args, Constant(int(exponent)))
    elif op == "pad":
        box = _box(params.pop("index", None), params.pop("shape", None))
        if box is None:
            return None
        node = _node(op, args, step.out, label)
        return None if node is None or params else replace(node, box=box)
    else:
        operands = args
    if params:
        return None
    return _node(op, operands, step.out, label)


def _box(index, shape) -> tuple | None:
    """(start, stop) along each dim of `shape` of what `index` selects, when it is
    slices of step 1 (a tuple of them, or one, with at most one `...`) that select
    something; else None."""
    index = index if isinstance(index, tuple) else (index,)
    if not isinstance(shape, tuple) or not all(
            isinstance(i, slice) or i is Ellipsis for i in index):
        return None
    ellipses = [at for at, i in enumerate(index) if i is Ellipsis]
    if len(ellipses) > 1:
        return None
    if ellipses:
        at = ellipses[0]
        index = index[:at] + (slice(None),) * (len(shape) - len(index) + 1) + index[at + 1:]
    if not 0 < len(index) <= len(shape):
        return None
    box = []
    for size, selection in zip(shape, index + (slice(None),) * (len(shape) - len(index))):
        start, stop, step = selection.indices(size)
        if step != 1 or stop <= start:
            return None
        box.append((start, stop))
    return tuple(box)


def _call_node(step: Call) -> Node | None:
    op = CALL_OPS.get(numpy_function(step.fn))
    if (op is None or step.kwargs or step.effect or step.writes or step.scalar_out
            or not isinstance(step.out, Ref)):
        return None
    if op == "cast":
        if len(step.args) != 2 or not isinstance(step.args[0], Ref):
            return None
        try:
            target = np.dtype(step.args[1])
        except TypeError:
            return None
        if target not in FLOATS:
            return None
        return _node(op, step.args[:1], step.out.slot, step.label)
    return _node(op, step.args, step.out.slot, step.label)


def _node(op: str, operands: tuple, out: int, label: str) -> Node | None:
    if len(operands) != ARITY.get(op, 2):
        return None
    converted = []
    for operand in operands:
        if isinstance(operand, Ref):
            converted.append(operand.slot)
        elif isinstance(operand, Constant):
            converted.append(operand)
        elif _number(operand) is not None:
            typed = isinstance(operand, np.generic)
            converted.append(Constant(operand, operand.dtype if typed else None))
        else:
            return None
    if not any(isinstance(o, int) for o in converted):
        return None
    return Node(op, tuple(converted), out, label)


def _number(value):
    """`value` if it is a finite-or-not float, a bool or a small integer; else None."""
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (int, np.integer)):
        return value if abs(int(value)) <= _EXACT_INTEGER else None
    if isinstance(value, (float, np.floating)) and np.dtype(type(value)) in (*FLOATS,
                                                                              np.dtype(float)):
        return value
    return None


def _dtypes_fit(node: Node, arrays: dict) -> bool:
    """Every operand and the result of a dtype the kernels handle, as the op needs."""
    for operand in node.operands:
        if isinstance(operand, int) and arrays[operand].dtype not in VALUES:
            return False
        if isinstance(operand, Constant) and operand.dtype not in (None, *VALUES):
            return False
    kind, result = KINDS[node.op], arrays[node.out].dtype
    if kind == "comparison":
        return result == np.bool_ and compute_dtype(node, arrays) in FLOATS
    if node.op == "masked_scale":  # out = x * mask, then out *= x.dtype.type(scale)
        x, mask = node.operands[:2]
        return (result in FLOATS and isinstance(x, int) and arrays[x].dtype == result
                and isinstance(mask, int) and arrays[mask].dtype == np.bool_)
    if node.op == "pad":  # the operand fills the box, in the result's dtype
        x = node.operands[0]
        return (result in FLOATS and isinstance(x, int) and arrays[x].dtype == result
                and arrays[x].shape == tuple(stop - start for start, stop in node.box)
                and len(node.box) == len(arrays[node.out].shape)
                and all(stop <= size for (_, stop), size
                        in zip(node.box, arrays[node.out].shape, strict=True)))
    if node.op == "pow":  # NumPy arrays of float32/float64 take the products
        x = node.operands[0]
        return result in FLOATS and isinstance(x, int) and arrays[x].dtype == result
    if kind == "selection":
        condition = node.operands[0]
        return (result in FLOATS and isinstance(condition, int)
                and arrays[condition].dtype == np.bool_)
    return result in FLOATS
