"""minigrad: a tensor/autograd engine written from scratch, with PyTorch's names.

    import minigrad as mg
    from minigrad import nn, optim
    import minigrad.nn.functional as F
"""
from minigrad import autograd, distributed, nn, optim, profiler, suggest, utils, viz
from minigrad.autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from minigrad.backend import Device, cuda
from minigrad.creation import (
    arange,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from minigrad.dlpack import from_dlpack
from minigrad.dtypes import bfloat16, dtype, float16, float32, float64, int64
from minigrad.dtypes import bool_ as bool  # noqa: A001  (torch.bool)
from minigrad.generator import Generator
from minigrad.ops import (  # every op PyTorch also has as a function (torch.X)
    abs,
    absolute,
    add,
    all,
    allclose,
    amax,
    amin,
    any,
    argmax,
    argmin,
    argsort,
    bmm,
    cat,
    chunk,
    clamp,
    clip,
    clone,
    concat,
    concatenate,
    cos,
    cumprod,
    cumsum,
    div,
    divide,
    dot,
    einsum,
    eq,
    equal,
    erf,
    exp,
    flatten,
    flip,
    floor_divide,
    gather,
    ge,
    greater,
    greater_equal,
    gt,
    index_select,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    less,
    less_equal,
    log,
    log_softmax,
    logical_and,
    logical_not,
    logical_or,
    logsumexp,
    lt,
    masked_fill,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mm,
    mul,
    multinomial,
    multiply,
    narrow,
    ne,
    neg,
    negative,
    not_equal,
    outer,
    permute,
    pow,
    relu,
    repeat_interleave,
    reshape,
    roll,
    rsqrt,
    scatter,
    scatter_add,
    select,
    sigmoid,
    sin,
    softmax,
    sort,
    split,
    sqrt,
    square,
    squeeze,
    stack,
    std,
    sub,
    subtract,
    sum,
    swapaxes,
    swapdims,
    tanh,
    tile,
    topk,
    transpose,
    tril,
    triu,
    true_divide,
    unbind,
    unsqueeze,
    var,
    where,
)
from minigrad.random import get_rng_state, manual_seed, set_rng_state
from minigrad.serialization import load, save
from minigrad.size import Size
from minigrad.tensor import Tensor

long = int64
float = float32  # noqa: A001
double = float64
half = float16

__version__ = "0.1.0"


def __getattr__(name: str):
    # reached only for names minigrad lacks: say what it has instead (minigrad/suggest.py)
    raise suggest.missing_attribute("module 'minigrad'", name, suggest.MODULE_NEAR, globals())
