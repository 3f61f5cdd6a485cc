"""minigrad: a tensor/autograd engine written from scratch, with PyTorch's names.

    import minigrad as mg
    from minigrad import nn, optim
    import minigrad.nn.functional as F
"""
from minigrad import autograd, nn, optim, profiler, viz
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
    tensor,
    zeros,
    zeros_like,
)
from minigrad.dlpack import from_dlpack
from minigrad.dtypes import bool_ as bool  # noqa: A001  (torch.bool)
from minigrad.dtypes import dtype, float16, float32, float64, int64
from minigrad.ops import (
    abs,
    amax,
    argmax,
    argmin,
    cat,
    chunk,
    clamp,
    erf,
    exp,
    flatten,
    log,
    log_softmax,
    logsumexp,
    masked_fill,
    matmul,
    maximum,
    mean,
    minimum,
    permute,
    relu,
    reshape,
    rsqrt,
    sigmoid,
    softmax,
    split,
    sqrt,
    stack,
    std,
    sum,
    tanh,
    transpose,
    tril,
    triu,
    var,
    where,
)
from minigrad.random import get_rng_state, manual_seed, set_rng_state
from minigrad.serialization import load, save
from minigrad.tensor import Tensor

long = int64
float = float32  # noqa: A001
double = float64
half = float16

__version__ = "0.1.0"
