"""Forward values of the shape, view and rearranging ops, indexing, dtype casts and the
in-place updates, against index formulas written from each op's definition (out[i] =
x[f(i)]), on contiguous, transposed and strided inputs. No PyTorch needed (see
numpy_oracle)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import OP_SETTINGS, layouts
from hypothesis import given
from hypothesis import strategies as st
from numpy_oracle import assert_forward, assert_op, generic_arrays, generic_shapes, ids, tensor

import minigrad as mg
import minigrad.ops as ops

pytestmark = pytest.mark.device


def gathered(x, source_of):
    """The array out of out_shape with out[i] = x[source_of(i)], for out_shape the shape
    source_of is given with."""
    out_shape, mapping = source_of
    out = np.empty(out_shape, dtype=x.dtype)
    for position in np.ndindex(*out_shape):
        out[position] = x[mapping(position)]
    return out


def a_dim(data, ndim):
    return data.draw(st.integers(-ndim, ndim - 1))


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_reshape_view_flatten(data, shape, layout):
    """Row-major order of the elements is kept; only the shape changes."""
    x = data.draw(generic_arrays(shape))
    flat = [x[p] for p in np.ndindex(*shape)]
    size = len(flat)
    new_shape = (size // shape[0], shape[0])
    in_order = np.array(flat).reshape(new_shape)
    assert_op("reshape", (tensor(x, layout), (-1, shape[0])), in_order)
    assert_op("reshape_as", (tensor(x, layout), tensor(in_order)), in_order)
    assert_op("view", (tensor(x), *new_shape), in_order)
    assert_op("view_as", (tensor(x), tensor(in_order)), in_order)
    assert_op("flatten", (tensor(x, layout),), np.array(flat))
    start = data.draw(st.integers(0, len(shape) - 1))
    merged = shape[:start] + (int(np.prod(shape[start:])),)
    assert_op("flatten", (tensor(x, layout), start), np.array(flat).reshape(merged))


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_permute_transpose(data, shape, layout):
    x = data.draw(generic_arrays(shape))
    order = data.draw(st.permutations(range(len(shape))))
    out_shape = tuple(shape[d] for d in order)

    def from_permuted(position):
        source = [0] * len(shape)
        for out_dim, in_dim in enumerate(order):
            source[in_dim] = position[out_dim]
        return tuple(source)

    assert_forward(ops.permute(tensor(x, layout), order), gathered(x, (out_shape,
                                                                         from_permuted)))
    assert_forward(tensor(x, layout).permute(*order), gathered(x, (out_shape, from_permuted)))
    d0, d1 = a_dim(data, len(shape)), a_dim(data, len(shape))
    swapped = list(range(len(shape)))
    swapped[d0], swapped[d1] = swapped[d1], swapped[d0]
    expected = gathered(x, (tuple(shape[d] for d in swapped),
                            lambda p: tuple(p[swapped.index(d)] for d in range(len(shape)))))
    for name in ("transpose", "swapaxes", "swapdims"):
        assert_op(name, (tensor(x, layout), d0, d1), expected)


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(max_dims=2), layout=layouts())
def test_squeeze_unsqueeze_expand(data, shape, layout):
    x = data.draw(generic_arrays(shape))
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    at = dim % (len(shape) + 1)
    with_one = x.reshape(shape[:at] + (1,) + shape[at:])
    assert_op("unsqueeze", (tensor(x, layout), dim), with_one)
    assert_op("squeeze", (tensor(with_one), at), x)
    assert_op("squeeze", (tensor(with_one),), x)
    assert_op("squeeze", (tensor(x, layout), 0), x)  # a dim not of size 1 stays
    lead = data.draw(st.integers(2, 3))
    target = (lead,) + shape[:at] + (3,) + shape[at:]
    expected = gathered(with_one, (target, lambda p: p[1:at + 1] + (0,) + p[at + 2:]))
    assert_forward(ops.expand(tensor(with_one), target), expected)
    assert_op("expand_as", (tensor(with_one), tensor(np.zeros(target))), expected)


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts(), count=st.integers(2, 3))
def test_cat_stack(data, shape, layout, count):
    dim = a_dim(data, len(shape))
    axis = dim % len(shape)
    lengths = [data.draw(st.integers(1, 3)) for _ in range(count)]
    parts = [data.draw(generic_arrays(shape[:axis] + (n,) + shape[axis + 1:])) for n in lengths]
    starts = np.cumsum([0] + lengths)

    def from_parts(position):
        which = int(np.searchsorted(starts, position[axis], side="right")) - 1
        local = position[:axis] + (position[axis] - starts[which],) + position[axis + 1:]
        return parts[which][local]

    joined_shape = shape[:axis] + (sum(lengths),) + shape[axis + 1:]
    joined = np.array([from_parts(p) for p in np.ndindex(*joined_shape)]).reshape(joined_shape)
    for name in ("cat", "concat", "concatenate"):
        assert_forward(getattr(ops, name)([tensor(p, layout) for p in parts], dim), joined)
    same = [data.draw(generic_arrays(shape)) for _ in range(count)]
    at = data.draw(st.integers(0, len(shape)))
    stacked = np.array([same[p[at]][p[:at] + p[at + 1:]] for p in np.ndindex(
        *(shape[:at] + (count,) + shape[at:]))]).reshape(shape[:at] + (count,) + shape[at:])
    assert_forward(ops.stack([tensor(s, layout) for s in same], at), stacked)


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_chunk_split_unbind_narrow_select(data, shape, layout):
    x = data.draw(generic_arrays(shape))
    dim = a_dim(data, len(shape))
    n = shape[dim]

    def piece(start, stop):
        return np.take(x, list(range(start, stop)), axis=dim)

    chunks = data.draw(st.integers(1, n + 1))
    size = -(-n // chunks)  # ceil: every chunk but the last has this size
    expected = [piece(s, min(s + size, n)) for s in range(0, n, size)]
    for name, args in (("chunk", (chunks, dim)), ("split", (size, dim))):
        pieces = getattr(ops, name)(tensor(x, layout), *args)
        assert len(pieces) == len(expected)
        for got, want in zip(pieces, expected):
            assert_forward(got, want)
    cut = data.draw(st.integers(0, n))
    for got, want in zip(ops.split(tensor(x, layout), [cut, n - cut], dim),
                         [piece(0, cut), piece(cut, n)]):
        assert_forward(got, want)
    for i, got in enumerate(ops.unbind(tensor(x, layout), dim)):
        assert_forward(got, np.take(x, i, axis=dim))
    start = data.draw(st.integers(0, n))
    length = data.draw(st.integers(0, n - start))
    assert_op("narrow", (tensor(x, layout), dim, start, length), piece(start, start + length))
    index = data.draw(st.integers(-n, n - 1))
    assert_op("select", (tensor(x, layout), dim, index), np.take(x, index % n, axis=dim))


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_flip_roll(data, shape, layout):
    """flip: out[i] = x[n - 1 - i] along each dim; roll: out[i] = x[(i - shift) mod n]."""
    x = data.draw(generic_arrays(shape))
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, min_size=1))
    flipped = gathered(x, (shape, lambda p: tuple(
        shape[d] - 1 - i if d in dims else i for d, i in enumerate(p))))
    assert_op("flip", (tensor(x, layout), dims), flipped)
    shifts = [data.draw(st.integers(-5, 5)) for _ in dims]
    by_dim = dict(zip(dims, shifts))
    rolled = gathered(x, (shape, lambda p: tuple(
        (i - by_dim.get(d, 0)) % shape[d] for d, i in enumerate(p))))
    assert_op("roll", (tensor(x, layout), shifts, dims), rolled)
    shift = data.draw(st.integers(-7, 7))  # no dims: roll the flattened tensor
    flat = x.reshape(-1)
    assert_op("roll", (tensor(x, layout), shift),
              np.array([flat[(i - shift) % flat.size] for i in range(flat.size)]).reshape(shape))


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_repeat_tile(data, shape, layout):
    """out[i] = x[i mod n] per dim; extra leading counts add dims."""
    x = data.draw(generic_arrays(shape))
    extra = data.draw(st.integers(0, 2))
    counts = [data.draw(st.integers(1, 3)) for _ in range(len(shape) + extra)]
    out_shape = tuple(c * n for c, n in zip(counts, (1,) * extra + shape))
    expected = gathered(x, (out_shape, lambda p: tuple(
        i % n for i, n in zip(p[extra:], shape))))
    assert_op("repeat", (tensor(x, layout), *counts), expected)
    assert_op("tile", (tensor(x, layout), counts), expected)
    fewer = counts[extra + 1:]  # tile pads a short list with leading ones
    tiled_shape = shape[:len(shape) - len(fewer)] + tuple(
        c * n for c, n in zip(fewer, shape[len(shape) - len(fewer):]))
    assert_op("tile", (tensor(x, layout), fewer), gathered(x, (tiled_shape, lambda p: tuple(
        i % n for i, n in zip(p, shape)))))


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_repeat_interleave(data, shape, layout):
    """Element j along dim appears counts[j] times in a row."""
    x = data.draw(generic_arrays(shape))
    dim = a_dim(data, len(shape))
    counts = [data.draw(st.integers(0, 3)) for _ in range(shape[dim])]
    sources = [j for j, c in enumerate(counts) for _ in range(c)]
    assert_op("repeat_interleave", (tensor(x, layout), ids(counts), dim),
              np.take(x, sources, axis=dim))
    flat = x.reshape(-1)
    assert_op("repeat_interleave", (tensor(x, layout), 2),
              np.array([v for v in flat for _ in range(2)]))


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_clone_contiguous_and_casts(data, shape, layout):
    x = data.draw(generic_arrays(shape))
    for name in ("clone", "contiguous"):
        out = getattr(ops, name)(tensor(x, layout))
        assert_forward(out, x)
    source = tensor(x, layout)
    copy = ops.clone(source)
    with mg.no_grad():
        copy[(0,) * len(shape)] = 100.0
    assert_forward(source, x)  # a clone owns its memory
    assert_forward(ops.to_dtype(source, mg.float32), x.astype(np.float32), rtol=0, atol=0)
    assert_forward(ops.to_dtype(source, mg.int64), np.trunc(x).astype(np.int64))
    assert_forward(ops.to_dtype(source, mg.bool), x != 0)
    assert_forward(ops.to_device(source, source.device), x)


@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(min_dims=2), layout=layouts())
def test_indexing(data, shape, layout):
    """Basic (step, negative, None, ...), integer-array and boolean indexing, read and
    written, against the element-by-element definition."""
    x = data.draw(generic_arrays(shape))
    n0, n1 = shape[0], shape[1]
    rows = data.draw(st.lists(st.integers(-n0, n0 - 1), min_size=1, max_size=4))
    mask = data.draw(st.lists(st.booleans(), min_size=n1, max_size=n1))
    t = tensor(x, layout)
    assert_forward(t[::-1], gathered(x, (shape, lambda p: (n0 - 1 - p[0],) + p[1:])))
    assert_forward(t[None, ..., -1], gathered(x, ((1,) + shape[:-1], lambda p: p[1:] + (
        shape[-1] - 1,))))
    assert_forward(t[1:, ::2], gathered(x, ((n0 - 1, (n1 + 1) // 2) + shape[2:],
                                            lambda p: (p[0] + 1, 2 * p[1]) + p[2:])))
    assert_forward(ops.getitem(t, ids(rows)), gathered(x, ((len(rows),) + shape[1:],
                                                           lambda p: (rows[p[0]],) + p[1:])))
    kept = [j for j in range(n1) if mask[j]]
    assert_forward(t[:, tensor(np.array(mask))], gathered(x, (
        (n0, len(kept)) + shape[2:], lambda p: (p[0], kept[p[1]]) + p[2:])))
    written = x.copy()
    for r in rows:
        written[r] = -5.0
    target = tensor(x.copy(), layout)
    ops.setitem_(target, ids(rows), -5.0)
    assert_forward(target, written)


INPLACE = {
    "add_": (lambda t, o: t.add_(o, alpha=2.0), lambda x, o: x + 2.0 * o),
    "sub_": (lambda t, o: t.sub_(o), lambda x, o: x - o),
    "mul_": (lambda t, o: t.mul_(o), lambda x, o: x * o),
    "div_": (lambda t, o: t.div_(o + 10.0), lambda x, o: x / (o + 10.0)),
    "copy_": (lambda t, o: t.copy_(o), lambda x, o: x * 0.0 + o),
    "fill_": (lambda t, o: t.fill_(1.25), lambda x, o: np.full(x.shape, 1.25)),
    "zero_": (lambda t, o: t.zero_(), lambda x, o: np.zeros(x.shape)),
    "masked_fill_": (lambda t, o: t.masked_fill_(o > 0, -1.0), lambda x, o: np.where(
        o > 0, -1.0, x)),
    "clamp_": (lambda t, o: t.clamp_(-1.0, 0.5), lambda x, o: np.where(
        x < -1.0, -1.0, np.where(x > 0.5, 0.5, x))),
}


@pytest.mark.parametrize("name", list(INPLACE))
@OP_SETTINGS
@given(data=st.data(), shape=generic_shapes(), layout=layouts())
def test_inplace_updates(name, data, shape, layout):
    """In-place updates (minigrad.ops.inplace) change the tensor itself, with a
    broadcast operand."""
    update, formula = INPLACE[name]
    x = data.draw(generic_arrays(shape))
    other = data.draw(generic_arrays(shape[1:]))
    expected = formula(x, other)
    t = tensor(x, layout)
    assert update(t, tensor(other)) is t
    assert_forward(t, expected)
