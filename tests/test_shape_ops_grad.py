"""Hypothesis gradient checks of the ops that move, copy or cast elements without
arithmetic: reshape/view/flatten, unsqueeze/squeeze, expand, contiguous/clone, stack,
split/chunk, indexing (basic, integer arrays with repeats, boolean masks) and dtype casts,
on contiguous, transposed, strided and sliced leaves (helpers.check_grad: the full
Jacobian and a random-upstream backward against central differences). permute, transpose,
.T and cat are with the other contract ops in test_ops_grad.py."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    FEW_EXAMPLES,
    OP_SETTINGS,
    PER_LAYOUT,
    arrays,
    check_grad,
    dims_of,
    draw_operands,
    layout_cases,
    layouts,
    make_tensor,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_cases import leaf

import minigrad as mg

pytestmark = pytest.mark.device


# ----------------------------------------------------------------------------- views and copies


@st.composite
def reshape_targets(draw):
    shape = draw(shapes())
    size = int(np.prod(shape))
    factors = [d for d in range(1, size + 1) if size % d == 0]
    first = draw(st.sampled_from(factors))
    target = draw(st.sampled_from([(size,), (first, size // first), (first, -1),
                                   (1, size, 1), (-1,)]))
    if size == 1:
        target = draw(st.sampled_from([(), (1,), (1, 1), target]))
    return shape, target


@OP_SETTINGS
@given(data=st.data(), args=reshape_targets(), layout=layouts())
def test_reshape_view_flatten(data, args, layout):
    shape, target = args
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(lambda t: t.reshape(target), x)
    if layout == "contiguous":  # view() of the others may need a copy, and raises then
        check_grad(lambda t: t.view(*target) if target else t.view(()), x)
    check_grad(lambda t: mg.reshape(t, target), x)
    check_grad(lambda t: t.flatten(), x)
    if x.ndim >= 2:
        check_grad(lambda t: mg.flatten(t, 1, -1), x)
        check_grad(lambda t: t.flatten(0, 1), x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_unsqueeze_squeeze(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    new_dim = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check_grad(lambda t: t.unsqueeze(new_dim), x)
    check_grad(lambda t: t.squeeze(), x)
    if x.ndim:
        dim = data.draw(dims_of(x.ndim))
        check_grad(lambda t: t.squeeze(dim), x)
    check_grad(lambda t: t.unsqueeze(0).unsqueeze(-1).squeeze(0), x)


@st.composite
def expand_args(draw):
    """A shape with size-1 dims and a target that grows them and may add leading dims."""
    shape = draw(shapes(max_side=2))
    grown = tuple(draw(st.integers(1, 3)) if n == 1 else n for n in shape)
    target = [draw(st.sampled_from([n, -1])) if n == m else n for n, m in zip(grown, shape)]
    leading = draw(st.lists(st.integers(1, 3), max_size=2))
    return shape, tuple(leading) + tuple(target)


@OP_SETTINGS
@given(data=st.data(), args=expand_args(), layout=layouts())
def test_expand(data, args, layout):
    shape, target = args
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(lambda t: t.expand(*target), x)
    check_grad(lambda t: t.expand(target) * 1.0, x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_contiguous_and_clone(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    out = x.contiguous()
    assert out.array.flags.c_contiguous
    check_grad(lambda t: t.contiguous(), x)
    check_grad(lambda t: t.clone(), x)
    check_grad(lambda t: t.clone() * t, x)


@pytest.mark.parametrize("layout", layout_cases())
@PER_LAYOUT
@given(data=st.data(), shape=shapes(), count=st.integers(1, 3))
def test_stack(layout, data, shape, count):
    tensors, view = draw_operands(data, [shape] * count, layout)
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_grad(lambda *ts: mg.stack(view(ts), dim), *tensors)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1, max_side=5), layout=layouts())
def test_split_chunk(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    dim = data.draw(dims_of(x.ndim))
    length = x.shape[dim]
    size = data.draw(st.integers(1, length))
    check_grad(lambda t: t.split(size, dim), x)
    sizes = data.draw(st.lists(st.integers(0, length), min_size=1, max_size=3))
    sizes = sizes[:-1] + [length - sum(sizes[:-1])] if sum(sizes[:-1]) <= length else [length]
    check_grad(lambda t: mg.split(t, sizes, dim), x)
    chunks = data.draw(st.integers(1, 4))
    check_grad(lambda t: t.chunk(chunks, dim), x)
    check_grad(lambda t: mg.chunk(t, chunks, dim)[0] * 2, x)


# ----------------------------------------------------------------------------- indexing


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1, max_side=4), layout=layouts())
def test_getitem_basic(data, shape, layout):
    """Integers, slices with any step (negative ones too), None and Ellipsis."""
    x = leaf(data.draw(arrays(shape)), layout)
    index = data.draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True,
                                        allow_ellipsis=True))
    check_grad(lambda t: t[index], x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1, max_side=4), layout=layouts(),
       as_tensor=st.booleans())
def test_getitem_integer_arrays_with_repeats(data, shape, layout, as_tensor):
    """Integer-array indices (which repeat elements; their gradients must add up)."""
    x = leaf(data.draw(arrays(shape)), layout)
    index = data.draw(hnp.integer_array_indices(
        shape, result_shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=5)))
    if as_tensor:
        index = tuple(make_tensor(part) for part in index)
    check_grad(lambda t: t[index], x)


@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=1, max_side=4), layout=layouts())
def test_getitem_bool_mask(data, shape, layout):
    x = leaf(data.draw(arrays(shape)), layout)
    mask = data.draw(hnp.arrays(np.bool_, shape))
    check_grad(lambda t: t[make_tensor(mask)], x)
    row_mask = mask.reshape(-1)[: shape[0]] if mask.size >= shape[0] else mask[..., 0]
    check_grad(lambda t: t[make_tensor(row_mask)], x)


INDEX_CASES = {
    "repeated_list": lambda: [0, 0, 2, 0],
    "repeated_tensor": lambda: make_tensor(np.array([[2, 2], [0, 2]])),
    "negative_step": lambda: (slice(None, None, -2), slice(3, 0, -1)),
    "none_ellipsis": lambda: (None, Ellipsis, 1),
    "mixed_int_and_array": lambda: (1, [3, 3, 0]),
    "array_slice_array": lambda: ([0, 2, 2], slice(None), [1, 1, 0]),
    "ellipsis_array": lambda: (Ellipsis, [1, 1]),
    "negative_int": lambda: (-1, slice(None, None, 2)),
    "bool_rows": lambda: make_tensor(np.array([True, False, True])),
}


@pytest.mark.parametrize("case", list(INDEX_CASES))
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_getitem_cases(case, data, layout):
    x = leaf(data.draw(arrays((3, 4, 2))), layout)
    index = INDEX_CASES[case]()
    check_grad(lambda t: t[index], x)


# ----------------------------------------------------------------------------- dtype


@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(), layout=layouts())
def test_to_dtype_float64_float32_roundtrip(data, shape, layout):
    """float64 -> float32 -> float64: the gradient passes through both casts (eps large
    enough that float32 rounding does not swamp the finite difference)."""
    x = leaf(data.draw(arrays(shape)), layout)
    check_grad(lambda t: t.to(mg.float32).to(mg.float64) * t, x, eps=1e-3, atol=1e-4)
    check_grad(lambda t: t.float().double(), x, eps=1e-3, atol=1e-4)
    check_grad(lambda t: t.to(mg.float64), x)  # a no-op cast keeps the graph


@FEW_EXAMPLES
@given(data=st.data(), shape=shapes())
def test_float32_leaf_gets_float32_grad_through_float64(data, shape):
    array = data.draw(arrays(shape)).astype(np.float32)
    x = make_tensor(array, requires_grad=True)
    upstream = data.draw(arrays(shape))
    (x.to(mg.float64) * 3.0).backward(make_tensor(upstream))
    assert x.grad.dtype is mg.float32
    np.testing.assert_allclose(x.grad.numpy(), (3 * upstream).astype(np.float32), rtol=1e-6)
