"""Ops that rearrange or pad elements: flip, roll, repeat, tile, repeat_interleave and
F.pad in its four modes. Gradients (float64, central differences; see helpers.check_grad)
on contiguous, transposed and strided leaves, second derivatives, and the errors misuse
raises."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    OP_SETTINGS,
    arrays,
    check_grad,
    dims_of,
    floats,
    layouts,
    make_tensor,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from op_cases import error_test, gradgrad_test, index_tensor, leaf

import minigrad as mg
import minigrad.nn.functional as F

pytestmark = pytest.mark.device


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_flip_roll(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    check_grad(lambda t: t.flip(*dims) if dims else t.flip(()), x)
    shifts = [data.draw(st.integers(-4, 4)) for _ in dims]
    check_grad(lambda t: mg.roll(t, shifts, dims) if dims else mg.roll(t, 2), x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_repeat_tile(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    extra = data.draw(st.integers(0, 2))
    counts = [data.draw(st.integers(0, 3)) for _ in range(len(shape) + extra)]
    check_grad(lambda t: t.repeat(*counts) if counts else t.repeat(()), x)
    fewer = counts[:data.draw(st.integers(0, len(counts)))]
    check_grad(lambda t: mg.tile(t, fewer), x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts(), per_element=st.booleans())
def test_repeat_interleave(data, shape, layout, per_element):
    x = leaf(data.draw(arrays(shape)), layout)
    dim = None if not shape or data.draw(st.booleans()) else data.draw(dims_of(len(shape)))
    size = int(np.prod(shape)) if dim is None else shape[dim]
    repeats = index_tensor([data.draw(st.integers(0, 3)) for _ in range(size)]) \
        if per_element else data.draw(st.integers(0, 3))
    check_grad(lambda t: t.repeat_interleave(repeats, dim), x)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@OP_SETTINGS
@given(data=st.data(), layout=layouts())
def test_pad(mode, data, layout):
    count = data.draw(st.integers(1, 3))
    batch = data.draw(st.integers(1, 2)) if mode != "constant" else data.draw(st.integers(0, 2))
    shape = tuple(data.draw(st.integers(1, 3)) for _ in range(batch)) + tuple(
        data.draw(st.integers(2, 4)) for _ in range(count))
    amounts = []
    for dim in reversed(range(len(shape) - count, len(shape))):
        n = shape[dim]
        # circular wraps what is left after cropping: at most n - 1 next to a crop
        low, high = {"constant": (-1, 3), "reflect": (-1, n - 1),
                     "replicate": (-1, 3), "circular": (-1, n - 1)}[mode]
        amounts += [data.draw(st.integers(low, high)), data.draw(st.integers(low, high))]
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(lambda t: F.pad(t, amounts, mode=mode, value=1.5 if mode == "constant" else None),
               x)


# name -> (function, list of (shape, elements) for its inputs); linear ops are composed
# with a product, so that their second derivative is not zero
GRADGRAD = {
    "flip_roll": (lambda a: a.flip(0).roll(1, 1) * a, [((2, 3), floats())]),
    "repeat": (lambda a: a.repeat(2, 1, 2) ** 2, [((2, 3), floats())]),
    "repeat_interleave": (lambda a: a.repeat_interleave(index_tensor([2, 0, 1]), 1) ** 2,
                          [((2, 3), floats())]),
    "pad_constant": (lambda a: F.pad(a, (1, -1, 2, 0), value=0.5) ** 2, [((2, 3), floats())]),
    "pad_reflect": (lambda a: F.pad(a, (2, 1), mode="reflect") ** 2, [((2, 3), floats())]),
    "pad_replicate": (lambda a: F.pad(a, (1, 2), mode="replicate") ** 2, [((2, 3), floats())]),
}


test_gradgradcheck = gradgrad_test(GRADGRAD)


def t(values):
    return make_tensor(np.asarray(values))


X = np.arange(6.0).reshape(2, 3)

ERRORS = {
    # name: (callable, exception type, fragments the message must contain)
    "flip_repeated_dim": (lambda: mg.flip(t(X), (0, 0)), RuntimeError, ["flip", "[0, 0]"]),
    "roll_mismatch": (lambda: mg.roll(t(X), (1, 2), 0), RuntimeError,
                      ["roll", "2 shifts", "1 dims"]),
    "repeat_too_few": (lambda: t(X).repeat(2), RuntimeError, ["repeat", "[2]", "(2, 3)"]),
    "repeat_negative": (lambda: t(X).repeat(2, -1), RuntimeError, ["repeat", "-1"]),
    "repeat_float": (lambda: t(X).repeat(2.0, 1), TypeError, ["repeat", "integers"]),
    "repeat_interleave_counts": (lambda: mg.repeat_interleave(t(X), index_tensor([1, 2]), 1),
                                 RuntimeError, ["repeat_interleave", "2 repeat counts", "3"]),
    "repeat_interleave_negative": (lambda: t(X).repeat_interleave(-1), RuntimeError,
                                   ["repeat_interleave", "non-negative"]),
    "repeat_interleave_output_size": (lambda: t(X).repeat_interleave(2, output_size=3),
                                      RuntimeError, ["repeat_interleave", "output_size=3", "12"]),
    "pad_odd": (lambda: F.pad(t(X), (1,)), ValueError, ["pad", "even"]),
    "pad_too_many_dims": (lambda: F.pad(t(X), (1, 1, 1, 1, 1, 1)), ValueError,
                          ["pad", "3 dims", "(2, 3)"]),
    "pad_mode": (lambda: F.pad(t(X), (1, 1), mode="wrap"), ValueError, ["pad", "'wrap'"]),
    "pad_reflect_too_far": (lambda: F.pad(t(X), (3, 0), mode="reflect"), ValueError,
                            ["pad", "reflect", "at most 2", "size 3"]),
    "pad_reflect_1d": (lambda: F.pad(t([1.0, 2.0]), (1, 1), mode="reflect"),
                       NotImplementedError, ["pad", "reflect", "(2,)"]),
    "pad_crops_too_much": (lambda: F.pad(t(X), (-2, -2)), ValueError,
                           ["pad", "negative size", "size 3"]),
    "pad_value_with_mode": (lambda: F.pad(t(X), (1, 1), mode="replicate", value=2.0),
                            ValueError, ["pad", "value", "constant"]),
}


test_error_names_the_op_and_the_problem = error_test(ERRORS)
