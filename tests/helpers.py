"""Shared test helpers: device-aware tensor creation, hypothesis strategies that draw
values from an op's domain, and gradient checks against central differences.

Op tests create their tensors with `make_tensor`, which places them on the device named
by MINIGRAD_TEST_DEVICE (cpu or gpu; `pytest --device gpu` sets it), so the same op tests
run on the GPU. Tests that use it carry the `device` marker (see conftest.py), which
skips them with a reason when the GPU is asked for and CUDA is absent.
"""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.tensor import constant

DEVICE_ENV = "MINIGRAD_TEST_DEVICE"
LAYOUTS = ("contiguous", "transposed", "strided")

# modest example counts and no deadline: the full Jacobian of every example is built
OP_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FEW_EXAMPLES = settings(OP_SETTINGS, max_examples=10)


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
    "strided" makes it every other element of a larger array along the last dim. The
    leaf then owns a non-contiguous view, which is what ops must handle.
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
    raise ValueError(f"unknown layout {layout!r}")


def to_numpy(value) -> np.ndarray:
    return value.numpy() if isinstance(value, mg.Tensor) else np.asarray(value)


# ----------------------------------------------------------------------------- strategies


def shapes(min_dims: int = 0, max_dims: int = 3, max_side: int = 3, min_side: int = 1):
    """Small shapes, 0-d and size-1 dims included."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


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
    return hnp.arrays(np.float64, shape, elements=floats() if elements is None else elements)


def distinct_arrays(shape, spacing: float = 0.1):
    """Arrays of pairwise distinct values at least `spacing` apart (no ties for max/min;
    no two values within a finite-difference step)."""
    size = int(np.prod(shape))
    return hnp.arrays(np.int64, size, elements=st.integers(-40, 40), unique=True).map(
        lambda ints: (ints * spacing).astype(np.float64).reshape(shape)
    )


def layouts():
    return st.sampled_from(LAYOUTS)


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
        data = leaf.data
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
