"""Hypothesis gradient checks (float64, central differences; see helpers.check_grad) for
the selection, ordering, scan, einsum, rearranging, view and padding ops, on contiguous,
transposed and strided leaves. Index tensors are drawn at random within range; where a
position written twice would make the gradient ambiguous (scatter) they are drawn
distinct."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    FEW_EXAMPLES,
    OP_SETTINGS,
    arrays,
    check_grad,
    dims_of,
    distinct_arrays,
    floats,
    layouts,
    make_tensor,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F

pytestmark = pytest.mark.device


def leaf(array, layout="contiguous"):
    return make_tensor(array, requires_grad=True, layout=layout)


def index_tensor(array):
    return make_tensor(np.asarray(array, dtype=np.int64))


@st.composite
def gather_args(draw, min_dims=1):
    """(x shape, dim, index array) for gather: index no larger than x apart from dim."""
    shape = draw(shapes(min_dims=min_dims))
    dim = draw(dims_of(len(shape)))
    index_shape = tuple(
        draw(st.integers(1, 4)) if d == dim % len(shape) else draw(st.integers(1, n))
        for d, n in enumerate(shape)
    )
    values = draw(st.lists(st.integers(0, shape[dim] - 1), min_size=int(np.prod(index_shape)),
                           max_size=int(np.prod(index_shape))))
    return shape, dim, np.array(values, dtype=np.int64).reshape(index_shape)


@st.composite
def distinct_positions(draw, min_dims=1):
    """(x shape, dim, index) for scatter: along dim, no position is named twice."""
    shape = draw(shapes(min_dims=min_dims))
    dim = draw(dims_of(len(shape))) % len(shape)
    count = draw(st.integers(1, shape[dim]))
    index_shape = tuple(count if d == dim else draw(st.integers(1, n))
                        for d, n in enumerate(shape))
    keys = draw(arrays(tuple(shape[dim] if d == dim else n for d, n in enumerate(index_shape))))
    order = np.argsort(keys, axis=dim, kind="stable")  # a permutation along dim per line
    return shape, dim, np.take(order, np.arange(count), axis=dim)


@pytest.mark.parametrize("name", ["sin", "cos"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_sin_cos(name, data, shape, layout):
    x = leaf(data.draw(arrays(shape, floats(-6.0, 6.0))), layout)
    check_grad(getattr(mg, name), x)
    check_grad(lambda t: getattr(t, name)(), x)


@OP_SETTINGS
@given(data=st.data(), args=gather_args(), layout=layouts())
def test_gather(data, args, layout):
    shape, dim, index = args
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(lambda t: mg.gather(t, dim, index_tensor(index)), x)


@OP_SETTINGS
@given(data=st.data(), args=distinct_positions(), layout=layouts(), use_value=st.booleans())
def test_scatter(data, args, layout, use_value):
    shape, dim, index = args
    x = leaf(data.draw(arrays(shape)), layout)
    if use_value:
        check_grad(lambda t: t.scatter(dim, index_tensor(index), 2.5), x)
        return
    src = leaf(data.draw(arrays(tuple(n + 1 for n in index.shape))))  # larger than index
    check_grad(lambda t, s: mg.scatter(t, dim, index_tensor(index), s), x, src)


@OP_SETTINGS
@given(data=st.data(), args=gather_args(), layout=layouts())
def test_scatter_add_repeated_positions(data, args, layout):
    shape, dim, index = args
    x = leaf(data.draw(arrays(shape)), layout)
    src = leaf(data.draw(arrays(index.shape)))
    check_grad(lambda t, s: mg.scatter_add(t, dim, index_tensor(index), s), x, src)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_index_select(data, shape, layout):
    dim = data.draw(dims_of(len(shape)))
    picks = data.draw(st.lists(st.integers(0, shape[dim] - 1), min_size=0, max_size=5))
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(lambda t: t.index_select(dim, index_tensor(picks)), x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts(), descending=st.booleans())
def test_sort_and_topk_values(data, shape, layout, descending):
    x = leaf(data.draw(distinct_arrays(shape)), layout)
    dim = data.draw(dims_of(len(shape)))
    check_grad(lambda t: t.sort(dim, descending=descending).values, x)
    size = shape[dim] if shape else 1
    k = data.draw(st.integers(0, size))
    check_grad(lambda t: mg.topk(t, k, dim, largest=descending).values, x)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_cumsum_cumprod(name, data, shape, layout):
    """cumprod's inputs include exact zeros, where its O(n) formula would divide by 0."""
    elements = st.one_of(st.just(0.0), floats(-2.0, 2.0)) if name == "cumprod" else floats()
    x = leaf(data.draw(arrays(shape, elements)), layout)
    dim = data.draw(dims_of(len(shape)))
    check_grad(lambda t: getattr(mg, name)(t, dim), x)


# equations and, per operand, its letters (with "." for one broadcast dim of "...")
EINSUM = {
    "matmul": "ij,jk->ik",
    "batched": "bij,bjk->bik",
    "implicit": "ij,jk",
    "trace": "ii",
    "diagonal": "ii->i",
    "diagonal_mixed": "iij,jk->ik",
    "transpose_ellipsis": "...ij->...ji",
    "ellipsis_broadcast": "...ij,jk",
    "sum_all": "ij->",
    "outer": "i,j->ij",
    "three_operands": "ab,bc,cd->ad",
    "sum_only_in_one": "ij,jk->i",
    "ellipsis_summed": "...i->i",
}


@pytest.mark.parametrize("name", list(EINSUM))
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_einsum(name, data, layout):
    equation = EINSUM[name]
    sizes = {c: data.draw(st.integers(1, 3)) for c in "abcdijk"}
    terms = equation.split("->")[0].split(",")
    operands = []
    for term in terms:
        batch = tuple(data.draw(st.integers(1, 2)) for _ in range(data.draw(
            st.integers(0, 2)))) if "..." in term else ()
        shape = batch + tuple(sizes[c] for c in term.replace("...", ""))
        operands.append(leaf(data.draw(arrays(shape)), layout))
    if name == "ellipsis_broadcast":  # a size-1 batch dim broadcasts against the other's
        operands[0] = leaf(data.draw(arrays((1,) + tuple(operands[0].shape))), layout)
    check_grad(lambda *ts: mg.einsum(equation, *ts), *operands)


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


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_select_narrow_unbind(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    dim = data.draw(dims_of(len(shape)))
    size = shape[dim]
    position = data.draw(st.integers(-size, size - 1))
    start = data.draw(st.integers(0, size))
    length = data.draw(st.integers(0, size - start))
    check_grad(lambda t: t.select(dim, position), x)
    check_grad(lambda t: mg.narrow(t, dim, start, length), x)
    check_grad(lambda t: t.unbind(dim), x)


@OP_SETTINGS
@given(data=st.data(), n=st.integers(1, 3), k=st.integers(1, 3), m=st.integers(1, 3),
       batch=st.integers(1, 2), layout=layouts())
def test_mm_bmm_dot_outer(data, n, k, m, batch, layout):
    a, b = leaf(data.draw(arrays((n, k))), layout), leaf(data.draw(arrays((k, m))), layout)
    check_grad(mg.mm, a, b)
    a3 = leaf(data.draw(arrays((batch, n, k))), layout)
    b3 = leaf(data.draw(arrays((batch, k, m))), layout)
    check_grad(mg.bmm, a3, b3)
    u, v = leaf(data.draw(arrays((k,))), layout), leaf(data.draw(arrays((k,))))
    check_grad(mg.dot, u, v)
    check_grad(mg.outer, u, leaf(data.draw(arrays((m,)))))


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), keepdim=st.booleans(), layout=layouts())
def test_amin(data, shape, keepdim, layout):
    x = leaf(data.draw(distinct_arrays(shape)), layout)
    dim = None if not shape else data.draw(dims_of(len(shape)))
    check_grad(lambda t: mg.amin(t, dim, keepdim=keepdim), x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts(), alpha=floats(-2.0, 2.0))
def test_add_sub_alpha_square(data, shape, layout, alpha):
    a = leaf(data.draw(arrays(shape)), layout)
    b = leaf(data.draw(arrays(shape)))
    check_grad(lambda x, y: mg.add(x, y, alpha=alpha), a, b)
    check_grad(lambda x, y: x.sub(y, alpha=alpha), a, b)
    check_grad(mg.square, a)
