"""Forward values of the diagonal, norm and matrix-product-plus ops (ops/diagonals.py,
ops/norms.py, ops/matmul_add.py, mg.linalg): diagonal, diag, trace, norm and
linalg.vector_norm / matrix_norm / norm, addmm and baddbmm, against loops and sums over
the elements written from each op's definition. No PyTorch needed (see numpy_oracle)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from domains import reduced_dims, signed_distinct_magnitudes
from helpers import OP_SETTINGS, arrays, layouts, shapes
from hypothesis import given
from hypothesis import strategies as st
from numpy_oracle import assert_forward, assert_op, tensor

import minigrad as mg

pytestmark = pytest.mark.device


def diagonal_loop(x, offset, dim1, dim2):
    """out[rest..., i] = x[i at dim1, i + offset at dim2, rest elsewhere]."""
    rest = [d for d in range(x.ndim) if d not in (dim1, dim2)]
    start1, start2 = max(-offset, 0), max(offset, 0)
    length = max(0, min(x.shape[dim1] - start1, x.shape[dim2] - start2))
    out = np.empty(tuple(x.shape[d] for d in rest) + (length,))
    for p in np.ndindex(*out.shape):
        position = [0] * x.ndim
        for d, k in zip(rest, p[:-1]):
            position[d] = k
        position[dim1], position[dim2] = start1 + p[-1], start2 + p[-1]
        out[p] = x[tuple(position)]
    return out


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=2), offset=st.integers(-3, 3), layout=layouts())
def test_diagonal(data, shape, offset, layout):
    dim1, dim2 = data.draw(st.permutations(range(len(shape))))[:2]
    x = data.draw(arrays(shape))
    expected = diagonal_loop(x, offset, dim1, dim2)
    assert_op("diagonal", (tensor(x, layout), offset, dim1 - len(shape), dim2), expected)
    if {dim1, dim2} == {len(shape) - 2, len(shape) - 1}:
        last_two = diagonal_loop(x, offset, len(shape) - 2, len(shape) - 1)
        assert_forward(mg.linalg.diagonal(tensor(x, layout), offset=offset), last_two)


@OP_SETTINGS
@given(data=st.data(), n=st.integers(1, 4), offset=st.integers(-2, 2), layout=layouts())
def test_diag_of_a_vector(data, n, offset, layout):
    v = data.draw(arrays((n,)))
    size = n + abs(offset)
    expected = np.zeros((size, size))
    for i in range(n):
        expected[i + max(-offset, 0), i + max(offset, 0)] = v[i]
    assert_op("diag", (tensor(v, layout), offset), expected)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=2, max_dims=2), offset=st.integers(-2, 2),
       layout=layouts())
def test_diag_of_a_matrix_and_trace(data, shape, offset, layout):
    x = data.draw(arrays(shape))
    assert_op("diag", (tensor(x, layout), offset), diagonal_loop(x, offset, 0, 1))
    assert_op("trace", (tensor(x, layout),), np.float64(sum(x[i, i] for i in range(min(shape)))))
    ints = np.arange(int(np.prod(shape))).reshape(shape)
    assert_op("trace", (tensor(ints),), np.int64(sum(ints[i, i] for i in range(min(shape)))))


def norm_loop(values, ord):
    """The ord-norm of a list of numbers, from its definition."""
    magnitudes = [abs(v) for v in values]
    if ord == math.inf:
        return max(magnitudes)
    if ord == -math.inf:
        return min(magnitudes)
    if ord == 0:
        return float(sum(m != 0 for m in magnitudes))
    return sum(m**ord for m in magnitudes) ** (1 / ord)


@pytest.mark.parametrize("ord", [2, 1, 3, 1.5, 0.5, -1, 0, math.inf, -math.inf])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), keepdim=st.booleans(), layout=layouts())
def test_vector_norm(ord, data, shape, keepdim, layout):
    x = data.draw(signed_distinct_magnitudes(shape))
    dim = data.draw(reduced_dims(len(shape)))
    dims = range(len(shape)) if dim is None else [dim] if isinstance(dim, int) else dim
    dims = sorted(d % len(shape) for d in dims) if shape else []
    kept = [d for d in range(len(shape)) if d not in dims]
    rows = np.transpose(x, kept + dims).reshape(-1, int(np.prod([shape[d] for d in dims])))
    expected = np.array([norm_loop(row.tolist(), ord) for row in rows])
    expected = expected.reshape([1 if d in dims else n for d, n in enumerate(shape)] if keepdim
                                else [shape[d] for d in kept])
    assert_forward(mg.linalg.vector_norm(tensor(x, layout), ord, dim, keepdim), expected)
    assert_op("norm", (tensor(x, layout), ord, dim, keepdim), expected)


@pytest.mark.parametrize("ord", [1, -1, math.inf, -math.inf, "fro"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=2), keepdim=st.booleans(), layout=layouts())
def test_matrix_norm(ord, data, shape, keepdim, layout):
    rows, cols = data.draw(st.permutations(range(len(shape))))[:2]
    x = data.draw(arrays(shape))
    matrices = np.moveaxis(x, (rows, cols), (-2, -1))
    if ord == "fro":
        expected = np.sqrt((matrices**2).sum((-2, -1)))
    else:  # 1: the column sums' extreme, inf: the row sums'
        sums = np.abs(matrices).sum(-2 if abs(ord) == 1 else -1)
        expected = sums.max(-1) if ord > 0 else sums.min(-1)
    if keepdim:
        expected = np.expand_dims(expected, tuple(sorted((rows, cols))))
    for norm in (mg.linalg.matrix_norm, mg.linalg.norm):
        assert_forward(norm(tensor(x, layout), ord, (rows, cols), keepdim), expected)


@pytest.mark.parametrize("name", ["addmm", "baddbmm"])
@OP_SETTINGS
@given(data=st.data(), beta=st.sampled_from([1, 0, -1.5]), alpha=st.sampled_from([1, 0.5]),
       layout=layouts())
def test_matrix_product_plus(name, data, beta, alpha, layout):
    batch = (data.draw(st.integers(1, 3)),) if name == "baddbmm" else ()
    n, k, m = (data.draw(st.integers(1, 3)) for _ in range(3))
    input_shape = (batch + (n, m))[data.draw(st.integers(0, len(batch) + 2)):]
    c, a, b = (data.draw(arrays(s)) for s in (input_shape, batch + (n, k), batch + (k, m)))
    product = np.zeros(batch + (n, m))
    for p in np.ndindex(*product.shape):
        product[p] = sum(a[p[:-1] + (j,)] * b[p[:-2] + (j, p[-1])] for j in range(k))
    assert_op(name, (tensor(c, layout), tensor(a, layout), tensor(b, layout)),
              beta * c + alpha * product, beta=beta, alpha=alpha)
