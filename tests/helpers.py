"""Shared test helpers: device-aware tensor creation, hypothesis strategies that draw
values from an op's domain, and gradient checks against central differences.

Op tests create their tensors with `make_tensor`, which places them on the device named
by MINIGRAD_TEST_DEVICE (cpu or gpu; `pytest --device gpu` sets it), so the same op tests
run on the GPU. Tests that use it carry the `device` marker (see conftest.py), which
skips them with a reason when the GPU is asked for and CUDA is absent.
"""
from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.tensor import constant

DEVICE_ENV = "MINIGRAD_TEST_DEVICE"
# the memory layouts a leaf's array may have (make_tensor)
LAYOUTS = ("contiguous", "transposed", "strided", "sliced")
# the layouts an operand of an op may have: a leaf's, or a broadcast view of a smaller leaf
# (draw_operands)
OPERAND_LAYOUTS = LAYOUTS + ("broadcast",)

# modest example counts and no deadline: the full Jacobian of every example is built
# (15: shapes() seldom spends one on a single element)
OP_SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FEW_EXAMPLES = settings(OP_SETTINGS, max_examples=10)
# per layout case of an op (layout_cases): 6 cases of 4 examples
PER_LAYOUT = settings(OP_SETTINGS, max_examples=4)

# gradcheck's step and tolerances by the inputs' dtype (check_grad uses float64's). A
# central difference errs by eps^2 |f'''| / 6 (truncation) plus about u |f| / eps (each
# output rounded, u the unit roundoff): in float32 (u = 6e-8) a step of 1e-2 keeps the
# rounding part near 1e-4 for outputs up to 20 (sums of a few products of values near 2)
GRADCHECK_SETTINGS = {
    "float64": {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3},
    "float32": {"eps": 1e-2, "atol": 1e-3, "rtol": 1e-3},
}


# a test of the real GPU path: skipped, with the reason, where CUDA is not usable
requires_cuda = pytest.mark.skipif(
    not mg.cuda.is_available(), reason=f"needs CUDA: {mg.cuda.unavailable_reason()}"
)


def test_device() -> str:
    """The device op tests run on: MINIGRAD_TEST_DEVICE, 'cpu' (default) or 'gpu'."""
    name = os.environ.get(DEVICE_ENV, "cpu").strip().lower() or "cpu"
    return "gpu" if name in ("gpu", "cuda", "cuda:0") else name


test_device.__test__ = False  # a helper, not a test, despite its name


# ----------------------------------------------------------------------------- tensors


def make_tensor(array, requires_grad: bool = False, layout: str = "contiguous",
                dtype=None) -> mg.Tensor:
    """A leaf tensor on the test device holding `array`.

    layout "contiguous" copies the values into a fresh C-ordered array; "transposed" makes
    the data a transposed view of a contiguous array (Fortran order for ndim >= 2);
    "strided" makes it every other element of a larger array along the last dim; "sliced"
    makes it a window of a larger array, at an offset in every dim. The leaf then owns a
    non-contiguous view (or, for 1-D "sliced", one that starts inside its buffer), which
    is what ops must handle.
    """
    array = np.asarray(array)
    if dtype is not None:
        array = array.astype(mg.dtypes.as_dtype(dtype).np)
    host = _with_layout(array, layout)
    device = test_device()
    if device == "cpu":
        data = host
    else:
        data = _with_layout(mg.backend.to_device(array, mg.Device(device)), layout)
    t = constant(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _with_layout(array, layout: str):
    xp = np if isinstance(array, np.ndarray) else mg.backend.array_module(array)
    if layout == "contiguous" or array.ndim == 0:
        return xp.array(array, copy=True, order="C")
    if layout == "transposed":
        return xp.ascontiguousarray(array.T).T  # same values, reversed strides
    if layout == "strided":
        container = xp.zeros(array.shape[:-1] + (2 * array.shape[-1],), dtype=array.dtype)
        container[..., ::2] = array
        return container[..., ::2]
    if layout == "sliced":
        container = xp.zeros(tuple(n + 2 for n in array.shape), dtype=array.dtype)
        window = tuple(slice(1, n + 1) for n in array.shape)
        container[window] = array
        return container[window]
    raise ValueError(f"unknown layout {layout!r}")


def vector(values, requires_grad: bool = True):
    """A float64 tensor of `values` on the test device, a leaf that requires grad unless
    told otherwise."""
    return make_tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def to_numpy(value) -> np.ndarray:
    return value.numpy() if isinstance(value, mg.Tensor) else np.asarray(value)


# ----------------------------------------------------------------------------- strategies


def _one_in(n: int):
    """True in about one draw in n (False when shrunk)."""
    return st.integers(0, n - 1).map(lambda k: k == n - 1)


@st.composite
def shapes(draw, min_dims: int = 0, max_dims: int = 3, max_side: int = 3,
           min_side: int = 1):
    """Small shapes whose sides are 2 to max_side, except a size-1 dim (where min_side
    allows) in about one shape of 2+ dims in three, and a 0-d shape (where min_dims
    allows) in about one in fourteen: few examples hold a single element, whose gradients
    say little (tests/test_strategies.py measures it)."""
    ndim = draw(st.integers(min_dims, max_dims))
    if ndim == 0 and max_dims > 0 and not draw(_one_in(5)):
        ndim = draw(st.integers(max(min_dims, 1), max_dims))
    if max_side < 2:
        return (max_side,) * ndim
    sides = [draw(st.integers(max(min_side, 2), max_side)) for _ in range(ndim)]
    if min_side <= 1 and ndim >= 2 and draw(_one_in(3)):
        sides[draw(st.integers(0, ndim - 1))] = 1
    return tuple(sides)


@st.composite
def broadcastable_shapes(draw, num_shapes: int = 2, min_dims: int = 0, max_dims: int = 3,
                         max_side: int = 3):
    """Shapes that broadcast together: each is a trailing part of one result shape
    (from shapes()) with some of its dims 1."""
    result = draw(shapes(min_dims=min_dims, max_dims=max_dims, max_side=max_side))
    drawn = []
    for _ in range(num_shapes):
        shape = list(result[draw(st.integers(0, len(result))):])
        for dim in range(len(shape)):
            if draw(_one_in(3)):
                shape[dim] = 1
        drawn.append(tuple(shape))
    return drawn


def floats(low: float = -3.0, high: float = 3.0):
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


def away_from(points, margin: float, low: float = -3.0, high: float = 3.0):
    """Floats in [low, high] at distance >= margin from every point (kinks of an op)."""
    edges = sorted(points)
    bounds, start = [], low
    for p in edges:
        if p - margin > start:
            bounds.append((start, p - margin))
        start = max(start, p + margin)
    if high > start:
        bounds.append((start, high))
    return st.one_of(*[floats(a, b) for a, b in bounds])


def nonzero(margin: float = 0.25, high: float = 3.0):
    """Floats of either sign with |x| >= margin (denominators, abs, relu)."""
    return away_from([0.0], margin, -high, high)


def positive(low: float = 0.25, high: float = 4.0):
    """The domain of log, sqrt, rsqrt and a pow base with a tensor exponent."""
    return floats(low, high)


def arrays(shape, elements=None):
    """float64 arrays with each element drawn on its own (hypothesis would otherwise fill
    most of an array with one value, often 0, and tell few rules apart), all distinct
    unless the elements come from a short list (st.sampled_from: ties on purpose)."""
    elements = floats() if elements is None else elements
    distinct = not isinstance(elements, _SAMPLED_FROM)
    return hnp.arrays(np.float64, shape, elements=elements, unique=distinct,
                      fill=None if distinct else st.nothing())


_SAMPLED_FROM = type(st.sampled_from([0.0, 1.0]))


def distinct_arrays(shape, spacing: float = 0.1):
    """Arrays of pairwise distinct values at least `spacing` apart (no ties for max/min;
    no two values within a finite-difference step)."""
    size = int(np.prod(shape))
    return hnp.arrays(np.int64, size, elements=st.integers(-40, 40), unique=True).map(
        lambda ints: (ints * spacing).astype(np.float64).reshape(shape)
    )


def layouts():
    """A leaf layout for make_tensor."""
    return st.sampled_from(LAYOUTS)


def layout_cases():
    """The values of an op test's `layout` parameter: each operand layout for every operand
    at once, so each reaches every operand in every run, and "mixed", where each operand
    draws its own. Use with PER_LAYOUT settings."""
    return list(OPERAND_LAYOUTS) + ["mixed"]


def draw_operands(data, shapes_, layout: str, elements=None) -> tuple[list, Callable]:
    """Leaves for an op's array operands, of the given shapes, in `layout` (a layout_cases
    value), and `view`, which makes the operands from the leaves: `check_grad(lambda *ts:
    op(*view(ts)), *leaves)`. A "broadcast" operand is its leaf expanded (stride 0) from
    a shape with some dims 1 or missing; the other layouts are the leaf's own."""
    elements = elements if isinstance(elements, (list, tuple)) else [elements] * len(shapes_)
    leaves, targets = [], []
    for shape, element in zip(shapes_, elements):
        own = data.draw(st.sampled_from(OPERAND_LAYOUTS)) if layout == "mixed" else layout
        leaf_shape = data.draw(_shrunk(shape)) if own == "broadcast" else shape
        array = data.draw(arrays(leaf_shape, element))
        leaves.append(make_tensor(array, requires_grad=True,
                                  layout="contiguous" if own == "broadcast" else own))
        targets.append(shape if own == "broadcast" else None)

    def view(tensors):
        return [t if target is None else t.expand(*target)
                for t, target in zip(tensors, targets)]

    return leaves, view


@st.composite
def _shrunk(draw, shape):
    """A shape that broadcasts to `shape` and is smaller when it can be: leading dims
    dropped, others set to 1."""
    if not shape or max(shape) == 1:
        return shape
    kept = list(shape[draw(st.integers(0, len(shape) - 1)):])
    for dim in range(len(kept)):
        if draw(st.booleans()):
            kept[dim] = 1
    if kept == list(shape):
        kept[shape.index(max(shape))] = 1
    return tuple(kept)


def dims_of(ndim: int):
    """A valid dim (negative ones included) for a tensor of ndim dims."""
    size = max(ndim, 1)
    return st.integers(-size, size - 1)


# ----------------------------------------------------------------------------- checks


def check_grad(func, *inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
               seed: int = 0) -> None:
    """Check func's gradient two independent ways.

    1. mg.autograd.gradcheck: the full Jacobian (one backward per output element, so
       every output element and every input element) against central differences.
    2. backward(gradient=v) with a random upstream v into the leaves' .grad, compared
       with central differences of <func(x), v> computed in NumPy; the .grad must have
       its leaf's shape and dtype.
    """
    assert mg.autograd.gradcheck(func, inputs, eps=eps, atol=atol, rtol=rtol)
    check_vjp(func, *inputs, eps=eps, atol=atol, rtol=rtol, seed=seed)


def check_vjp(func, *inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    leaves = [t for t in inputs if isinstance(t, mg.Tensor) and t.requires_grad]
    for leaf in leaves:
        leaf.grad = None
    outputs = _as_tuple(func(*inputs))
    cotangents = [rng.standard_normal(o.shape) for o in outputs]

    def inner_product() -> float:
        outs = _as_tuple(func(*inputs))
        return float(sum(np.sum(o.numpy().astype(np.float64) * v)
                         for o, v in zip(outs, cotangents)))

    differentiable = [(o, v) for o, v in zip(outputs, cotangents) if o.requires_grad]
    assert differentiable, "check_vjp: no output requires grad"
    for index, (out, v) in enumerate(differentiable):
        last = index == len(differentiable) - 1
        out.backward(mg.tensor(v, dtype=out.dtype, device=out.device), retain_graph=not last)
    for leaf in leaves:
        expected = np.zeros(leaf.shape)
        data = leaf.array
        for position in np.ndindex(*data.shape):
            original = data[position].item()
            data[position] = original + eps
            plus = inner_product()
            data[position] = original - eps
            minus = inner_product()
            data[position] = original
            expected[position] = (plus - minus) / (2 * eps)
        if leaf.grad is None:
            np.testing.assert_allclose(expected, 0, atol=atol)
            continue
        assert leaf.grad.shape == leaf.shape, (leaf.grad.shape, leaf.shape)
        assert leaf.grad.dtype is leaf.dtype
        assert leaf.grad.device == leaf.device
        np.testing.assert_allclose(leaf.grad.numpy(), expected, atol=atol, rtol=rtol)


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def assert_bits_equal(got, want) -> None:
    """The same dtype, shape and bits (NaN where NaN): what a compiled step must give."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), f"{got} != {want}"
