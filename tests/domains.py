"""Hypothesis strategies that draw inputs from an op's domain, away from the points where
it jumps or has a kink, shared by the forward-value and the gradient tests of the
elementwise, search, index and norm ops; and the mark of the one case among them that
the CuPy stand-in cannot run."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import arrays, broadcastable_shapes, dims_of, floats, nonzero, shapes, test_device
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg

# the stand-in cannot wrap what np.unique(axis=...) returns (views of a structured
# array), though CuPy's unique takes axis
STAND_IN_UNIQUE_AXIS = pytest.mark.xfail(
    test_device() == "gpu" and mg.backend.device.fake_gpu_requested(), raises=ValueError,
    strict=True, reason="the CuPy stand-in refuses views of np.unique's structured array")


@st.composite
def dividends_and_divisors(draw, shapes_=None):
    """(a, b) with |b| >= 0.25 of a shape broadcasting to a's, and a = q b for quotients
    q = k + f, k an integer in [-3, 3] and 0.05 <= f <= 0.95: away from the integer
    quotients where fmod and remainder jump (a difference step never crosses one)."""
    shape_a, shape_b = draw(broadcastable_shapes() if shapes_ is None else shapes_)
    b = draw(arrays(shape_b, nonzero(0.25)))
    quotients = st.builds(lambda k, f: k + f, st.integers(-3, 3), floats(0.05, 0.95))
    q = draw(arrays(np.broadcast_shapes(shape_a, shape_b), quotients))
    return q * b, b


def signed_distinct_magnitudes(shape):
    """Values 0.1 to 4 in magnitude, no two magnitudes equal (no ties for max |x|), of
    either sign: away from 0, where |x| has its kink."""
    size = int(np.prod(shape))
    magnitudes = hnp.arrays(np.int64, size, elements=st.integers(1, 40), unique=True)
    signs = hnp.arrays(np.int64, size, elements=st.sampled_from([-1, 1]))
    return st.tuples(magnitudes, signs).map(lambda ms: (ms[0] * ms[1] * 0.1).reshape(shape))


@st.composite
def bool_masks(draw, shape):
    """A bool array of `shape`, each element drawn on its own."""
    size = int(np.prod(shape))
    flags = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    return np.array(flags, dtype=bool).reshape(shape)


@st.composite
def slice_writes(draw, distinct: bool = False):
    """(x, dim, index, source) for index_add/index_copy/index_fill: x of 1-3 dims, a
    vector of up to 4 slice positions along dim (repeating unless `distinct`), and a
    source with one slice per position."""
    shape = draw(shapes(min_dims=1))
    dim = draw(dims_of(len(shape))) % len(shape)
    size = shape[dim]
    if distinct:
        index = draw(st.permutations(range(size)))[:draw(st.integers(0, size))]
    else:
        index = draw(st.lists(st.integers(0, size - 1), max_size=4))
    source_shape = shape[:dim] + (len(index),) + shape[dim + 1:]
    return draw(arrays(shape)), dim, np.array(index, dtype=np.int64), draw(arrays(source_shape))


@st.composite
def reduced_dims(draw, ndim: int):
    """None, an int or a tuple of distinct dims (negative ones included)."""
    if ndim == 0 or draw(st.booleans()):
        return None
    dims = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    dims = [d - ndim if draw(st.booleans()) else d for d in dims]
    return dims[0] if len(dims) == 1 and draw(st.booleans()) else tuple(dims)


@st.composite
def take_along_dim_indices(draw, shape: tuple[int, ...], dim: int):
    """int64 indices for take_along_dim along `dim` of an input of `shape`: of the input's
    rank, 1 to 3 long along dim and each other dim the input's size or 1 (broadcast),
    values in [-size, size) (a negative one counts from the end)."""
    size = shape[dim]
    index_shape = tuple(draw(st.integers(1, 3)) if d == dim else draw(st.sampled_from([1, n]))
                        for d, n in enumerate(shape))
    count = int(np.prod(index_shape))
    values = draw(st.lists(st.integers(-size, size - 1), min_size=count, max_size=count))
    return np.array(values, dtype=np.int64).reshape(index_shape)
