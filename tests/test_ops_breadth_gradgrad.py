"""Second derivatives (gradgradcheck: create_graph=True through every backward rule) of
the selection, ordering, scan, einsum, rearranging and padding ops. Linear ops (gather,
flip, pad, ...) are composed with a square, so their second derivative is not zero."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    FEW_EXAMPLES,
    arrays,
    distinct_arrays,
    floats,
    layouts,
    make_tensor,
    nonzero,
)
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F

pytestmark = pytest.mark.device


def index(values):
    return make_tensor(np.asarray(values, dtype=np.int64))


# name -> (function, list of (shape, elements) for its inputs)
CASES = {
    "sin": (lambda a: a.sin(), [((2, 3), floats())]),
    "cos": (lambda a: mg.cos(a), [((2, 3), floats())]),
    "gather": (lambda a: mg.gather(a, 1, index([[2, 2], [0, 1]])) ** 2, [((2, 3), floats())]),
    "scatter": (lambda a, s: a.scatter(0, index([[1, 0, 1]]), s * s) ** 2,
                [((2, 3), floats()), ((1, 3), floats())]),
    "scatter_add": (lambda a, s: mg.scatter_add(a, 1, index([[0, 0], [2, 1]]), s) ** 2,
                    [((2, 3), floats()), ((2, 2), floats())]),
    "index_select": (lambda a: a.index_select(0, index([1, 1, 0])) ** 2, [((2, 3), floats())]),
    "sort": (lambda a: a.sort(1, descending=True).values ** 3, [((2, 3), "distinct")]),
    "topk": (lambda a: mg.topk(a, 2, 0).values ** 3, [((3, 2), "distinct")]),
    "cumsum": (lambda a: a.cumsum(1) ** 2, [((2, 3), floats())]),
    # the O(n) rule divides by x: its own derivative needs |x| well above underflow
    "cumprod": (lambda a: a.cumprod(1), [((2, 3), nonzero(0.1))]),
    "cumprod_zeros": (lambda a: mg.cumprod(a * index([[1, 0, 1], [0, 1, 1]]), 1),
                      [((2, 3), floats())]),
    "einsum_matmul": (lambda a, b: mg.einsum("bij,bjk->bik", a, b),
                      [((2, 2, 3), floats()), ((2, 3, 2), floats())]),
    "einsum_trace_square": (lambda a: mg.einsum("ii", a * a), [((3, 3), floats())]),
    "einsum_ellipsis": (lambda a, b: mg.einsum("...i,i->...", a, b) ** 2,
                        [((2, 3), floats()), ((3,), floats())]),
    "flip_roll": (lambda a: a.flip(0).roll(1, 1) * a, [((2, 3), floats())]),
    "repeat": (lambda a: a.repeat(2, 1, 2) ** 2, [((2, 3), floats())]),
    "repeat_interleave": (lambda a: a.repeat_interleave(index([2, 0, 1]), 1) ** 2,
                          [((2, 3), floats())]),
    "pad_constant": (lambda a: F.pad(a, (1, -1, 2, 0), value=0.5) ** 2, [((2, 3), floats())]),
    "pad_reflect": (lambda a: F.pad(a, (2, 1), mode="reflect") ** 2, [((2, 3), floats())]),
    "pad_replicate": (lambda a: F.pad(a, (1, 2), mode="replicate") ** 2, [((2, 3), floats())]),
}


@pytest.mark.parametrize("name", list(CASES))
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_gradgradcheck(name, data, layout):
    func, specs = CASES[name]
    inputs = [
        make_tensor(data.draw(distinct_arrays(shape) if elements == "distinct" else
                              arrays(shape, elements)), requires_grad=True, layout=layout)
        for shape, elements in specs
    ]
    assert mg.autograd.gradgradcheck(func, inputs)
