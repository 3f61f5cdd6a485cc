"""Every op of minigrad, one module per family. Each differentiable op is a Function
(forward on arrays, backward in tensor ops) plus the function users call.

TENSOR_METHODS below names the ops that are also Tensor methods taking the same
arguments, self first: tensor.py binds each of these names to the op function itself, so
`x.gather(1, i)` *is* `mg.gather(x, 1, i)` (one implementation, no twin).
"""
from minigrad.ops.arithmetic import add, div, floor_divide, mul, neg, pow, square, sub
from minigrad.ops.cast import to_device, to_dtype
from minigrad.ops.compare import (
    all,
    allclose,
    any,
    eq,
    equal,
    ge,
    gt,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    logical_and,
    logical_not,
    logical_or,
    lt,
    ne,
)
from minigrad.ops.einsum import einsum
from minigrad.ops.gather import gather, index_select, scatter, scatter_, scatter_add, scatter_add_
from minigrad.ops.indexing import getitem, inplace, setitem_
from minigrad.ops.matmul import bmm, dot, matmul, mm, outer
from minigrad.ops.rearrange import flip, repeat, repeat_interleave, roll, tile
from minigrad.ops.reduce import (
    amax,
    amin,
    argmax,
    argmin,
    logsumexp,
    max,
    mean,
    min,
    std,
    sum,
    var,
)
from minigrad.ops.sampling import multinomial
from minigrad.ops.scan import cumprod, cumsum
from minigrad.ops.select import masked_fill, maximum, minimum, tril, triu, where
from minigrad.ops.shape import (
    cat,
    chunk,
    clone,
    contiguous,
    expand,
    flatten,
    permute,
    reshape,
    split,
    squeeze,
    stack,
    sum_to_size,
    transpose,
    unsqueeze,
)
from minigrad.ops.softmax import log_softmax, softmax
from minigrad.ops.sort import argsort, sort, topk
from minigrad.ops.unary import (
    abs,
    clamp,
    cos,
    erf,
    exp,
    gelu,
    log,
    relu,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    tanh,
)
from minigrad.ops.views import expand_as, narrow, reshape_as, select, unbind, view, view_as

# the other names PyTorch gives the same functions
absolute = abs
clip = clamp
concat = concatenate = cat
divide = true_divide = div
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
multiply = mul
negative = neg
subtract = sub
swapaxes = swapdims = transpose

TENSOR_METHODS = (
    # elementwise
    "abs", "absolute", "add", "clamp", "clip", "cos", "div", "divide", "erf", "exp",
    "floor_divide", "gelu", "log", "masked_fill", "maximum", "minimum", "mul", "multiply",
    "neg", "negative", "pow", "relu", "rsqrt", "sigmoid", "sin", "sqrt", "square", "sub",
    "subtract", "tanh", "true_divide",
    # comparisons and logic
    "all", "allclose", "any", "eq", "equal", "ge", "greater", "greater_equal", "gt",
    "isclose", "isfinite", "isinf", "isnan", "le", "less", "less_equal", "logical_and",
    "logical_not", "logical_or", "lt", "ne", "not_equal",
    # reductions and scans
    "amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logsumexp",
    "max", "mean", "min", "softmax", "std", "sum", "var",
    # products
    "bmm", "dot", "matmul", "mm", "outer",
    # shape
    "chunk", "clone", "contiguous", "expand_as", "flatten", "flip", "narrow", "repeat",
    "repeat_interleave", "reshape_as", "roll", "select", "split", "squeeze", "swapaxes",
    "swapdims", "tile", "transpose", "tril", "triu", "unbind", "unsqueeze", "view", "view_as",
    # selection, ordering and sampling
    "argsort", "gather", "index_select", "multinomial", "scatter", "scatter_", "scatter_add",
    "scatter_add_", "sort", "topk",
)

__all__ = [
    "TENSOR_METHODS", "abs", "absolute", "add", "all", "allclose", "amax", "amin", "any",
    "argmax", "argmin", "argsort", "bmm", "cat", "chunk", "clamp", "clip", "clone", "concat",
    "concatenate", "contiguous", "cos", "cumprod", "cumsum", "div", "divide", "dot", "einsum",
    "eq", "equal", "erf", "exp", "expand", "expand_as", "flatten", "flip", "floor_divide",
    "gather", "ge", "gelu", "getitem", "greater", "greater_equal", "gt", "index_select",
    "inplace", "isclose", "isfinite", "isinf", "isnan", "le", "less", "less_equal", "log",
    "log_softmax", "logical_and", "logical_not", "logical_or", "logsumexp", "lt",
    "masked_fill", "matmul", "max", "maximum", "mean", "min", "minimum", "mm", "mul",
    "multinomial", "multiply", "narrow", "ne", "neg", "negative", "not_equal", "outer",
    "permute", "pow", "relu", "repeat", "repeat_interleave", "reshape", "reshape_as", "roll",
    "rsqrt", "scatter", "scatter_", "scatter_add", "scatter_add_", "select", "setitem_",
    "sigmoid", "sin", "softmax", "sort", "split", "sqrt", "square", "squeeze", "stack", "std",
    "sub", "subtract", "sum", "sum_to_size", "swapaxes", "swapdims", "tanh", "tile",
    "to_device", "to_dtype", "topk", "transpose", "tril", "triu", "true_divide", "unbind",
    "unsqueeze", "var", "view", "view_as", "where",
]
