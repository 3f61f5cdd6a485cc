"""minigrad: a tensor/autograd engine written from scratch, with PyTorch's names.

    import minigrad as mg
    from minigrad import nn, optim
    import minigrad.nn.functional as F
"""
from minigrad import (
    amp,
    autograd,
    backends,
    cpu,
    distributed,
    linalg,
    multiprocessing,
    nn,
    ops,
    optim,
    profiler,
    suggest,
    utils,
    viz,
)
from minigrad.amp import autocast, get_autocast_dtype, is_autocast_enabled
from minigrad.autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from minigrad.backend import Device, cuda
from minigrad.backend.device import device
from minigrad.backends.cuda import get_float32_matmul_precision, set_float32_matmul_precision
from minigrad.compile import compile  # noqa: A004  (torch.compile)
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
from minigrad.determinism import are_deterministic_algorithms_enabled, use_deterministic_algorithms
from minigrad.dlpack import from_dlpack
from minigrad.dtypes import (
    bfloat16,
    dtype,
    finfo,
    float16,
    float32,
    float64,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    uint8,
)
from minigrad.dtypes import bool_ as bool  # noqa: A001  (torch.bool)
from minigrad.generator import Generator
from minigrad.ops.operands import result_type
from minigrad.random import get_rng_state, manual_seed, set_rng_state
from minigrad.serialization import load, save
from minigrad.size import Size
from minigrad.tensor import Tensor
from minigrad.tensor_types import (
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)

# every op PyTorch also has as a function (torch.X): mg.relu is ops.relu (see ops/__init__.py)
globals().update({name: ops.OPS[name][0] for name in ops.FUNCTIONS})
long = int64
int = int32  # noqa: A001
short = int16
float = float32  # noqa: A001
double = float64
half = float16

__version__ = "0.1.0"


def __getattr__(name: str):
    # reached only for names minigrad lacks: say what it has instead (minigrad/suggest.py)
    raise suggest.missing_attribute("module 'minigrad'", name, suggest.MODULE_NEAR, globals())
