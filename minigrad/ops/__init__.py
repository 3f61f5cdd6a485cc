"""Every differentiable op of minigrad, one module per family. Each op is a Function
(forward on arrays, backward in tensor ops) plus the function users call."""
from minigrad.ops.arithmetic import add, div, mul, neg, pow, sub
from minigrad.ops.cast import to_device, to_dtype
from minigrad.ops.compare import eq, ge, gt, le, logical_and, logical_not, logical_or, lt, ne
from minigrad.ops.indexing import getitem, inplace, setitem_
from minigrad.ops.matmul import matmul
from minigrad.ops.reduce import amax, argmax, argmin, logsumexp, max, mean, min, std, sum, var
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
from minigrad.ops.unary import abs, clamp, erf, exp, gelu, log, relu, rsqrt, sigmoid, sqrt, tanh

__all__ = [
    "abs", "add", "amax", "argmax", "argmin", "cat", "chunk", "clamp", "clone", "contiguous",
    "div", "eq", "erf", "exp", "expand", "flatten", "ge", "gelu", "getitem", "gt", "inplace",
    "le", "log", "log_softmax", "logical_and", "logical_not", "logical_or", "logsumexp", "lt",
    "masked_fill", "matmul", "max", "maximum", "mean", "min", "minimum", "mul", "ne", "neg",
    "permute", "pow", "relu", "reshape", "rsqrt", "setitem_", "sigmoid", "softmax", "split",
    "sqrt", "squeeze", "stack", "std", "sub", "sum", "sum_to_size", "tanh", "to_device",
    "to_dtype", "transpose", "tril", "triu", "unsqueeze", "var", "where",
]
