"""Forward values of the reductions, scans, softmax and products (sum ... var/std with
every correction, max/min and their indices, logsumexp, softmax/log_softmax, cumsum/
cumprod, matmul in every rank, mm/bmm/dot/outer, einsum) against NumPy formulas written
from each op's definition, over drawn dims on contiguous, transposed and strided inputs.
No PyTorch needed (see numpy_oracle)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, OP_SETTINGS, layouts
from hypothesis import given
from hypothesis import strategies as st
from numpy_oracle import (
    assert_forward,
    assert_op,
    generic_arrays,
    generic_shapes,
    log_softmax,
    softmax,
    tensor,
)

import minigrad.ops as ops

pytestmark = pytest.mark.device


@st.composite
def dims_and_keepdim(draw, ndim: int):
    """None, one dim (negative ones included) or a tuple of distinct dims; and keepdim."""
    kind = draw(st.sampled_from(["all", "one", "several"]))
    if kind == "all":
        dim = None
    elif kind == "one":
        dim = draw(st.integers(-ndim, ndim - 1))
    else:
        dim = tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                                  unique=True)))
    return dim, draw(st.booleans())


def axes(dim, ndim: int) -> tuple:
    if dim is None:
        return tuple(range(ndim))
    return tuple(d % ndim for d in ((dim,) if isinstance(dim, int) else dim))


def total(x, dim, keepdim):
    """Sum over the dims by adding one slice at a time."""
    out = x
    for axis in sorted(axes(dim, x.ndim), reverse=True):
        out = sum(np.take(out, i, axis=axis) for i in range(out.shape[axis]))
        if keepdim:
            out = np.expand_dims(out, axis)
    return np.asarray(out)


def count(x, dim) -> int:
    return int(np.prod([x.shape[a] for a in axes(dim, x.ndim)]))


REDUCTIONS = {
    "sum": lambda x, dim, keepdim: total(x, dim, keepdim),
    "mean": lambda x, dim, keepdim: total(x, dim, keepdim) / count(x, dim),
    "logsumexp": lambda x, dim, keepdim: np.log(total(np.exp(x), dim, keepdim)),
    "amax": lambda x, dim, keepdim: np.max(x, axis=axes(dim, x.ndim), keepdims=keepdim),
    "amin": lambda x, dim, keepdim: np.min(x, axis=axes(dim, x.ndim), keepdims=keepdim),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_reduction(name, data, shape, layout):
    x = data.draw(generic_arrays(shape))
    dim, keepdim = data.draw(dims_and_keepdim(len(shape)))
    if name == "logsumexp" and dim is None:
        dim = tuple(range(len(shape)))  # logsumexp requires dims, as in PyTorch
    assert_op(name, (tensor(x, layout),), REDUCTIONS[name](x, dim, keepdim), dim=dim,
              keepdim=keepdim)


@pytest.mark.parametrize("name", ["var", "std"])
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts(),
       correction=st.sampled_from([None, 0, 1, 2]), unbiased=st.booleans())
def test_var_std(name, data, shape, layout, correction, unbiased):
    """var = sum (x - mean)^2 / (N - correction); correction defaults to 1 (unbiased)
    or 0 (unbiased=False)."""
    x = data.draw(generic_arrays(shape))
    dim, keepdim = data.draw(dims_and_keepdim(len(shape)))
    n = count(x, dim)
    delta = (1 if unbiased else 0) if correction is None else correction
    if n - delta <= 0:
        return
    mean = total(x, dim, True) / n
    variance = total((x - mean) ** 2, dim, keepdim) / (n - delta)
    expected = variance if name == "var" else np.sqrt(variance)
    kwargs = {"dim": dim, "keepdim": keepdim, "unbiased": unbiased}
    if correction is not None:
        kwargs = {"dim": dim, "keepdim": keepdim, "correction": correction}
    assert_op(name, (tensor(x, layout),), expected, **kwargs)


@pytest.mark.parametrize("name", ["max", "min"])
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts(), keepdim=st.booleans())
def test_max_min_values_and_indices(name, data, shape, layout, keepdim):
    x = data.draw(generic_arrays(shape))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    pick = np.argmax if name == "max" else np.argmin
    index = np.expand_dims(pick(x, axis=dim), dim)
    values = np.take_along_axis(x, index, axis=dim)
    if not keepdim:
        index, values = index.squeeze(dim), values.squeeze(dim)
    result = getattr(ops, name)(tensor(x, layout), dim, keepdim=keepdim)
    assert_forward(result.values, values)
    assert_forward(result.indices, index)
    extreme = x.max() if name == "max" else x.min()
    assert_op(name, (tensor(x, layout),), np.array(extreme))
    arg_name = {"max": "argmax", "min": "argmin"}[name]
    assert_op(arg_name, (tensor(x, layout),), index, dim=dim, keepdim=keepdim)
    assert_op(arg_name, (tensor(x, layout),), np.array(pick(x)))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_softmax_log_softmax(name, data, shape, layout):
    x = data.draw(generic_arrays(shape, -8.0, 8.0))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    formula = softmax if name == "softmax" else log_softmax
    assert_op(name, (tensor(x, layout), dim), formula(x, dim))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_cumsum_cumprod(name, data, shape, layout):
    """out[..., i, ...] = x[..., 0, ...] (+ or *) ... x[..., i, ...] along dim."""
    x = data.draw(generic_arrays(shape, -2.0, 2.0))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    combine = np.add if name == "cumsum" else np.multiply
    running = np.take(x, [0], axis=dim)
    pieces = [running]
    for i in range(1, shape[dim]):
        running = combine(running, np.take(x, [i], axis=dim))
        pieces.append(running)
    assert_op(name, (tensor(x, layout), dim), np.concatenate(pieces, axis=dim))


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_sum_to_size(data, shape, layout):
    x = data.draw(generic_arrays(shape))
    ones = data.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
    target = tuple(1 if one else n for one, n in zip(ones, shape))
    dims = tuple(d for d, one in enumerate(ones) if one)
    expected = total(x, dims, True) if dims else x
    assert_op("sum_to_size", (tensor(x, layout), *target), expected)


def matmul_formula(a, b):
    """sum_k a[..., i, k] b[..., k, j] with broadcast batch dims; a 1-D operand is a row
    (first) or a column (second) whose dim is dropped from the result."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    out = (a2[..., :, :, None] * b2[..., None, :, :]).sum(axis=-2)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


@st.composite
def matmul_shapes(draw):
    n, k, m = (draw(st.integers(2, 4)) for _ in range(3))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    a_batch = tuple(1 if draw(st.booleans()) else d for d in batch)
    b_batch = batch[draw(st.integers(0, len(batch))):]
    a_shape = (k,) if draw(st.integers(0, 3)) == 0 else a_batch + (n, k)
    b_shape = (k,) if draw(st.integers(0, 3)) == 0 else b_batch + (k, m)
    return a_shape, b_shape


@OP_SETTINGS
@given(data=st.data(), shapes=matmul_shapes(), layout=layouts())
def test_matmul_every_rank(data, shapes, layout):
    a, b = data.draw(generic_arrays(shapes[0])), data.draw(generic_arrays(shapes[1]))
    expected = matmul_formula(a, b)
    assert_op("matmul", (tensor(a, layout), tensor(b, layout)), expected)
    assert_forward(tensor(a, layout) @ tensor(b), expected)


@OP_SETTINGS
@given(data=st.data(), sizes=st.tuples(*[st.integers(2, 4)] * 4), layout=layouts())
def test_mm_bmm_dot_outer(data, sizes, layout):
    batch, n, k, m = sizes
    a, b = data.draw(generic_arrays((n, k))), data.draw(generic_arrays((k, m)))
    assert_op("mm", (tensor(a, layout), tensor(b, layout)), matmul_formula(a, b))
    a3, b3 = data.draw(generic_arrays((batch, n, k))), data.draw(generic_arrays((batch, k, m)))
    assert_op("bmm", (tensor(a3, layout), tensor(b3)), matmul_formula(a3, b3))
    u, v = data.draw(generic_arrays((k,))), data.draw(generic_arrays((k,)))
    assert_op("dot", (tensor(u, layout), tensor(v)), np.array((u * v).sum()))
    w = data.draw(generic_arrays((m,)))
    assert_op("outer", (tensor(u, layout), tensor(w)), u[:, None] * w[None, :])


# equation and the shapes of its operands for a drawn size n
EINSUM = {
    "batched_matmul": ("bij,bjk->bik", lambda n: [(2, n, 3), (2, 3, n)]),
    "implicit_output": ("ji,jk", lambda n: [(3, n), (3, 2)]),
    "trace": ("ii", lambda n: [(n, n)]),
    "diagonal": ("ii->i", lambda n: [(n, n)]),
    "diagonal_and_contraction": ("iij,jk->ki", lambda n: [(n, n, 2), (2, 3)]),
    "ellipsis_transpose": ("...ij->...ji", lambda n: [(2, 2, n, 3)]),
    "ellipsis_broadcast": ("...ij,jk", lambda n: [(n, 2, 3), (3, 2)]),
    "three_operands": ("ab,bc,cd->da", lambda n: [(2, n), (n, 3), (3, 2)]),
    "sum_all": ("ij->", lambda n: [(n, 3)]),
    "outer": ("i,j->ji", lambda n: [(n,), (3,)]),
    "upper_case_letters": ("Ab,bC->CA", lambda n: [(2, n), (n, 3)]),
}


@pytest.mark.parametrize("case", list(EINSUM))
@FEW_EXAMPLES
@given(data=st.data(), n=st.integers(2, 3), layout=layouts())
def test_einsum(case, data, n, layout):
    equation, shapes_of = EINSUM[case]
    arrays = [data.draw(generic_arrays(s)) for s in shapes_of(n)]
    expected = np.einsum(equation, *arrays)
    assert_forward(ops.einsum(equation, *[tensor(a, layout) for a in arrays]), expected)
