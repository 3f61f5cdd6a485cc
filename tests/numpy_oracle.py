"""The NumPy side of the forward-value tests (tests/test_forward_*.py): strategies for
generic inputs, the comparison, and the few formulas several of those files share.

Every formula here and in those files is written from the op's definition, independently
of minigrad's code (no call into minigrad's reference twins), and none needs PyTorch, so a
forward bug (softmax over the wrong dim, a variance dividing by N + 1) fails the plain run.
"""
from __future__ import annotations

import math

import numpy as np
from helpers import floats, make_tensor, shapes, to_numpy
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad.ops as ops

# Inputs are float64 and at most a few hundred terms of size <= 10 meet in one output, so
# rounding stays below 1e-12 of the result; a wrong formula moves a value by far more.
RTOL = 1e-10
ATOL = 1e-10


def generic_shapes(min_dims: int = 1, max_dims: int = 3, max_side: int = 3):
    """Shapes whose every dim has two or more elements (a size-1 dim hides a wrong axis)."""
    return shapes(min_dims=min_dims, max_dims=max_dims, max_side=max_side, min_side=2)


def generic_arrays(shape, low: float = -3.0, high: float = 3.0):
    """float64 arrays of pairwise distinct values, not all zero: no ties, no constant rows,
    so a wrong axis, a swapped operand or a dropped term changes the result."""
    return hnp.arrays(np.float64, shape, elements=floats(low, high), unique=True).filter(
        lambda a: a.size == 0 or bool(np.any(a != 0)))


def tensor(array, layout: str = "contiguous", dtype=None):
    """A tensor on the test device holding `array` (see helpers.make_tensor)."""
    return make_tensor(array, layout=layout, dtype=dtype)


def ids(array):
    """An int64 tensor (class ids, indices) on the test device."""
    return make_tensor(np.asarray(array, dtype=np.int64))


def assert_forward(got, expected, rtol: float = RTOL, atol: float = ATOL) -> None:
    """got (a tensor, or a Python number for ops that return one) has expected's shape,
    dtype and values."""
    expected = np.asarray(expected)
    values = to_numpy(got)
    assert values.shape == expected.shape, (values.shape, expected.shape)
    assert values.dtype == expected.dtype, (values.dtype, expected.dtype)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(values, expected)
    else:
        np.testing.assert_allclose(values, expected, rtol=rtol, atol=atol)


def assert_op(name: str, args: tuple, expected, **kwargs) -> None:
    """minigrad.ops.<name>(*args, **kwargs) gives expected; so does the Tensor method of
    that name where there is one (it must be bound to the same op)."""
    assert_forward(getattr(ops, name)(*args, **kwargs), expected)
    if name in ops.TENSOR_METHODS:
        assert_forward(getattr(args[0], name)(*args[1:], **kwargs), expected)


def erf(x):
    """erf elementwise from the standard library's math.erf."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def softmax(x, axis: int):
    """exp(x_i) / sum_j exp(x_j) along axis."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis: int):
    """x_i - log sum_j exp(x_j) along axis."""
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reduced(values, reduction: str, divisor=None):
    """A loss's per-element values reduced: 'none', 'sum', or 'mean' (by divisor, default
    the element count)."""
    if reduction == "none":
        return values
    if reduction == "sum":
        return np.sum(values)
    return np.sum(values) / (values.size if divisor is None else divisor)


def reductions():
    return st.sampled_from(["none", "mean", "sum"])
