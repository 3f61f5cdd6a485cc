"""A strict NumPy-backed stand-in for the parts of CuPy that minigrad uses.

`MINIGRAD_FAKE_GPU=1` makes minigrad's "gpu" device use this module in place of CuPy, so
the GPU code path runs on machines without a GPU (compare Numba's CUDA simulator). Its
arrays keep their data in host memory but behave as CuPy's device arrays do wherever
host and device meet, so the mistakes that only show on a real GPU show here:

- `cupy.ndarray` is its own type; implicit conversion to NumPy raises TypeError
  (`np.asarray(x)`, a host array indexed by it, a Numba CPU kernel cannot type it);
  a NumPy array in an operation with it raises TypeError; `.get()`, `cupy.asnumpy` and
  `cupy.asarray` are the explicit copies; `float(x)` and `.item()` read one element;
- NumPy ufuncs and functions called on it dispatch here and return device arrays;
- CuPy's own behaviour: integer-array indices wrap around instead of raising; `x[...] = v`
  takes a device array or a scalar, never a host array; reductions give 0-d arrays;
  `cupyx.scipy.special.erf` maps float16 to float64; `cupy.random` draws only float32
  and float64; DLPack capsules say "CUDA device 0";
- CuPy's signatures: `cupy.array([...])` of a list that mixes device arrays with host
  values (or is ragged) raises TypeError; `ascontiguousarray`/`asfortranarray` take
  device arrays only; `clip` needs both bounds; NumPy's `where=` and `initial=` keywords
  raise TypeError; sorts are stable and take no other kind; a view's `base` is the one
  array owning its memory, the same object on every access;
- the order of atomics: `ufunc.at` (CuPy's scatter-add) applies the updates of repeated
  positions in a new random order on every call, so float sums into repeated indices
  differ from run to run, as they do on a GPU;
- `cupy.ElementwiseKernel`, for the subset of CUDA C that minigrad's compiler writes;
- `cupy.random`, `cupy.cuda` (Device, runtime, streams, events, synchronize), the memory
  pools and `cupy.cuda.using_allocator`, with CuPy's names;
- CUDA graphs: `Stream.begin_capture()` ... `end_capture()` gives a `cupy.cuda.Graph`.
  While the current stream captures, every kernel (ufuncs, operators in place or not,
  methods, indexing that copies, `x[...] = v`, functions, creation routines that write,
  `ElementwiseKernel`, random draws, matmul, Numba simulator kernels) is recorded and
  does not run: its results hold poison (NaN, bytes of 0xA5, True) and arrays from before
  the capture keep their values. `Graph.launch()` runs the kernels in issue order on the
  captured arrays, reading what they hold at launch; Python scalars, shapes and random
  numbers are the capture's. Copies between host and device (`.get()`, `float(x)`,
  printing, `cupy.asarray` of host data, host indices, boolean masks, `nonzero`) raise
  CuPy's RuntimeError during a capture; synchronising the capturing stream or the device
  raises CUDA's error and invalidates the capture (_capture.py, cuda/graph.py);
- any name CuPy has but the stand-in does not model, or that CuPy lacks, raises
  AttributeError naming it, so new code cannot silently lean on NumPy.

What it cannot show: CUDA numerics (the order of reductions and scans, fast-math), which
of several writes to one position lands (`x[idx] = v` with repeats), cuBLAS, the Numba
CUDA kernels on hardware, asynchrony between streams, device memory limits, and speed.
Of graphs: the capture modes (kept, not enforced: no "unsafe call" errors from other
threads, no implicit synchronisation with the legacy stream), a graph reading memory the
caller freed (the stand-in's graph keeps its arrays alive; on a GPU the caller must, see
cuda/graph.py), work issued to two streams joined by events into one capture, and the
launch's speed.
"""
from __future__ import annotations

import sys

from minigrad.testing.fake_cupy import cuda, linalg, random, testing
from minigrad.testing.fake_cupy._array import ndarray
from minigrad.testing.fake_cupy._dlpack import from_dlpack
from minigrad.testing.fake_cupy._elementwise_kernel import ElementwiseKernel
from minigrad.testing.fake_cupy._functions import FUNCTIONS
from minigrad.testing.fake_cupy._memory import DEFAULT_PINNED_POOL, DEFAULT_POOL

__version__ = "0.0.0+minigrad.stand-in"


def is_available() -> bool:
    return True


def get_default_memory_pool():
    """The device memory pool (used_bytes, total_bytes, free_all_blocks)."""
    return DEFAULT_POOL


def get_default_pinned_memory_pool():
    return DEFAULT_PINNED_POOL


def __dir__() -> list[str]:
    """Every name the module has, those made on first use included (as dir(cupy) lists
    CuPy's functions)."""
    return sorted(set(globals()) | set(FUNCTIONS))


def __getattr__(name: str):
    """Functions, ufuncs and dtypes on first use; AttributeError for anything else."""
    try:
        value = FUNCTIONS[name]
    except KeyError:
        raise AttributeError(
            f"module 'cupy' has no attribute {name!r} in minigrad's CuPy stand-in "
            f"({__name__}): CuPy lacks it or the stand-in does not model it yet"
        ) from None
    setattr(sys.modules[__name__], name, value)
    return value
