"""Second derivatives (gradgradcheck, float64, drawn inputs) of the ops whose backward
routes the gradient through a mask or a copy: max/min/amax/amin, maximum/minimum, relu,
triu/tril, dropout, clone/contiguous and a float32 round trip inside a float64 graph.

Kinks are avoided by drawing away from them: distinct values (no ties for max/min), |x|
away from 0 for relu. Ops that are linear in their input are composed with a product, so
that their second derivative is not zero."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import (
    FEW_EXAMPLES,
    dims_of,
    distinct_arrays,
    layouts,
    nonzero,
    shapes,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_cases import leaf

import minigrad as mg
import minigrad.nn.functional as F

pytestmark = pytest.mark.device


def gradgradcheck(func, *inputs, **kwargs) -> None:
    assert mg.autograd.gradgradcheck(func, inputs, **kwargs)


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin"])
@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts(), keepdim=st.booleans())
def test_extremes(name, data, shape, layout, keepdim):
    """The extreme's square, over all elements and along a drawn dim."""
    x = leaf(data.draw(distinct_arrays(shape)), layout)
    dim = data.draw(dims_of(len(shape)))
    op = getattr(mg, name)
    if name in ("max", "min"):
        gradgradcheck(lambda t: op(t) ** 2, x)
        gradgradcheck(lambda t: op(t, dim, keepdim=keepdim).values ** 2, x)
    else:
        gradgradcheck(lambda t: op(t, dim, keepdim=keepdim) ** 2, x)
        gradgradcheck(lambda t: op(t, tuple(range(len(shape)))) ** 2, x)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts(), broadcast=st.booleans())
def test_maximum_minimum(name, data, shape, layout, broadcast):
    """a and b drawn from one set of distinct values, so a != b everywhere; b is broadcast
    along the leading dims when `broadcast`."""
    b_shape = shape[1:] if broadcast else shape
    size_a, size_b = int(np.prod(shape)), int(np.prod(b_shape))
    values = data.draw(distinct_arrays((size_a + size_b,)))
    a = leaf(values[:size_a].reshape(shape), layout)
    b = leaf(values[size_a:].reshape(b_shape))
    op = getattr(mg, name)
    gradgradcheck(lambda s, t: op(s, t) * s * t, a, b)


@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_relu(data, shape, layout):
    x = leaf(data.draw(hnp.arrays(np.float64, shape, elements=nonzero(0.25))), layout)
    gradgradcheck(lambda t: t.relu() * t, x)
    gradgradcheck(lambda t: F.relu(t) ** 3, x)


@pytest.mark.parametrize("name", ["triu", "tril"])
@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=2, min_side=2), layout=layouts(),
       diagonal=st.integers(-2, 2))
def test_triangles(name, data, shape, layout, diagonal):
    x = leaf(data.draw(distinct_arrays(shape)), layout)
    op = getattr(mg, name)
    gradgradcheck(lambda t: op(t, diagonal) ** 2, x)


@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=2, min_side=2), layout=layouts(),
       p=st.sampled_from([0.2, 0.5, 0.8]), seed=st.integers(0, 2**16))
def test_dropout_with_a_fixed_mask(data, shape, layout, p, seed):
    """The generator is re-seeded inside the function, so every evaluation of the
    finite differences draws the same mask."""
    x = leaf(data.draw(distinct_arrays(shape)), layout)

    def dropped(t):
        mg.manual_seed(seed)
        return F.dropout(t, p) ** 2

    gradgradcheck(dropped, x)


@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=2), layout=layouts())
def test_clone_contiguous(data, shape, layout):
    x = leaf(data.draw(distinct_arrays(shape)), layout)
    gradgradcheck(lambda t: mg.clone(t) * t, x)
    gradgradcheck(lambda t: t.transpose(0, -1).contiguous() ** 2, x)


def float32_grid(shape):
    """Multiples of 2^-7 below 3 in size: float32 holds them, their halves and their
    products exactly."""
    return hnp.arrays(np.int64, shape, elements=st.integers(-384, 384)).map(
        lambda k: k / 128.0)


@FEW_EXAMPLES
@given(data=st.data(), shape=shapes(min_dims=1), layout=layouts())
def test_float32_round_trip_in_a_float64_graph(data, shape, layout):
    """(x.to(float32).to(float64))^2 and the same through .float()/.double(): values, the
    upstream gradient and the finite-difference step (2^-8) all lie on a grid float32
    holds exactly, so the round trip loses nothing and central differences of the
    bilinear first derivative are exact (hence the 1e-12 tolerance). A cast whose
    backward leaves the graph, or gives the gradient in the wrong dtype, fails."""
    x = leaf(data.draw(float32_grid(shape)), layout)
    upstream = leaf(data.draw(float32_grid(shape)))

    def round_trip(t):
        out = t.to(mg.float32).to(mg.float64)
        assert out.dtype is mg.float64
        return out**2

    gradgradcheck(round_trip, x, grad_outputs=(upstream,), eps=2.0**-8, atol=1e-12,
                  rtol=1e-12)
    gradgradcheck(lambda t: t.float().double() * t, x, grad_outputs=(upstream,),
                  eps=2.0**-8, atol=1e-12, rtol=1e-12)
