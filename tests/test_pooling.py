"""Pooling: max/avg/adaptive pooling, 1-D and 2-D, gradient checks (first and second
order, float64) over drawn kernels, strides, paddings, dilations and ceil_mode; PyTorch
as the oracle for outputs, indices and gradients (ties included); modules; errors."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, OP_SETTINGS, layouts, make_tensor
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

pytestmark = pytest.mark.device

TIES = st.sampled_from([-1.0, 0.0, 0.5, 1.0])  # few values, so windows hold ties


@st.composite
def pool_cases(draw, dims: int = 2, max_extra: int = 3, max_batch: int = 2):
    """A valid pooling call: input shape and the keyword arguments max_pool takes."""
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    stride = draw(st.one_of(st.none(), st.tuples(*[st.integers(1, 3)] * dims)))
    sizes = tuple(max(1, d * (k - 1) + 1 - 2 * p) + draw(st.integers(0, max_extra))
                  for k, p, d in zip(kernel, padding, dilation))
    shape = (draw(st.integers(1, max_batch)), draw(st.integers(1, 2))) + sizes
    arguments = {"kernel_size": kernel if draw(st.booleans()) or len(set(kernel)) > 1
                 else kernel[0], "stride": stride, "padding": padding, "dilation": dilation,
                 "ceil_mode": draw(st.booleans())}
    return shape, arguments


def _distinct(shape, seed: int) -> np.ndarray:
    """Values 0.1 apart in a random order: no ties, none within a finite-difference step."""
    size = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(size) - size / 2).reshape(shape) * 0.1


def _avg_arguments(arguments: dict, count_include_pad: bool) -> dict:
    """avg_pool's arguments: no dilation (PyTorch has none), count_include_pad added."""
    return {**{k: v for k, v in arguments.items() if k != "dilation"},
            "count_include_pad": count_include_pad}


def _without_dilation(case):
    shape, arguments = case
    return shape, {**arguments, "dilation": (1,) * len(arguments["padding"])}


def _max_pool(dims: int):
    return F.max_pool2d if dims == 2 else F.max_pool1d


def _avg_pool(dims: int):
    return F.avg_pool2d if dims == 2 else F.avg_pool1d


def _assume_no_window_in_padding_only(x, dims: int, arguments: dict) -> None:
    """Dilation lets a window read padding only; its max is -inf, as in PyTorch, where
    finite differences are undefined and PyTorch's index is arbitrary: skip those."""
    assume(np.isfinite(_max_pool(dims)(x.detach(), **arguments).numpy()).all())


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("dims", [1, 2])
@OP_SETTINGS
@given(data=st.data(), layout=layouts())
def test_max_pool_gradcheck(dims, data, layout):
    shape, arguments = data.draw(pool_cases(dims))
    x = make_tensor(_distinct(shape, data.draw(st.integers(0, 99))), requires_grad=True,
                    layout=layout)
    _assume_no_window_in_padding_only(x, dims, arguments)
    assert mg.autograd.gradcheck(lambda t: _max_pool(dims)(t, **arguments), (x,))


@pytest.mark.parametrize("dims", [1, 2])
@OP_SETTINGS
@given(data=st.data(), layout=layouts(), count_include_pad=st.booleans())
def test_avg_pool_gradcheck(dims, data, layout, count_include_pad):
    shape, arguments = data.draw(pool_cases(dims).map(_without_dilation))
    x = make_tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True,
                    layout=layout)
    pool = _avg_pool(dims)
    assert mg.autograd.gradcheck(
        lambda t: pool(t, **_avg_arguments(arguments, count_include_pad)), (x,))


@FEW_EXAMPLES
@given(data=st.data())
def test_pool_gradgradcheck(data):
    """The gradients are Functions whose own gradients are the forward ops again."""
    shape, arguments = data.draw(pool_cases(2, max_extra=2, max_batch=1))
    x = make_tensor(_distinct(shape, data.draw(st.integers(0, 99))), requires_grad=True)
    _assume_no_window_in_padding_only(x, 2, arguments)
    assert mg.autograd.gradgradcheck(lambda t: F.max_pool2d(t, **arguments), (x,))
    avg_arguments = _avg_arguments({**arguments, "dilation": 1}, count_include_pad=False)
    assert mg.autograd.gradgradcheck(lambda t: F.avg_pool2d(t, **avg_arguments), (x,))


@OP_SETTINGS
@given(data=st.data(), layout=layouts())
def test_adaptive_avg_pool_gradcheck_and_gradgradcheck(data, layout):
    height, width = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    output_size = (data.draw(st.integers(1, height)), data.draw(st.integers(1, width)))
    x = make_tensor(np.random.default_rng(1).standard_normal((2, 2, height, width)),
                    requires_grad=True, layout=layout)
    assert mg.autograd.gradcheck(lambda t: F.adaptive_avg_pool2d(t, output_size), (x,))
    assert mg.autograd.gradgradcheck(lambda t: F.adaptive_avg_pool2d(t[:1, :1], output_size),
                                     (x,))
    assert mg.autograd.gradgradcheck(lambda t: F.adaptive_avg_pool1d(t[:, :, 0], width), (x,))


# ----------------------------------------------------------------------------- PyTorch oracle


def _compare_with_torch(ours_fn, theirs_fn, array, layout="contiguous", seed=0):
    """Outputs (and int64 indices) equal; gradients equal for one random upstream."""
    torch = pytest.importorskip("torch")
    mine = make_tensor(array, requires_grad=True, layout=layout)
    reference = torch.tensor(array, requires_grad=True)
    out, expected = ours_fn(mine), theirs_fn(reference)
    if isinstance(expected, tuple):  # (values, indices)
        (out, indices), (expected, expected_indices) = out, expected
        assert indices.dtype is mg.int64
        np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-14)
    upstream = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(make_tensor(upstream))
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("dims", [1, 2])
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_max_pool_matches_torch_with_ties(dims, data, layout):
    """Values from a small set, so windows hold ties: the first maximal element wins the
    gradient and the index, as in PyTorch."""
    torch = pytest.importorskip("torch")
    shape, arguments = data.draw(pool_cases(dims, max_extra=5, max_batch=3))
    array = data.draw(hnp.arrays(np.float64, shape, elements=TIES))
    _assume_no_window_in_padding_only(make_tensor(array), dims, arguments)
    their_pool = getattr(torch.nn.functional, f"max_pool{dims}d")
    _compare_with_torch(lambda t: _max_pool(dims)(t, **arguments, return_indices=True),
                        lambda t: their_pool(t, **arguments, return_indices=True), array,
                        layout)


@pytest.mark.parametrize("dims", [1, 2])
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts(), count_include_pad=st.booleans())
def test_avg_pool_matches_torch(dims, data, layout, count_include_pad):
    torch = pytest.importorskip("torch")
    shape, arguments = data.draw(pool_cases(dims, max_extra=5, max_batch=3))
    arguments = _avg_arguments(arguments, count_include_pad)
    array = np.random.default_rng(2).standard_normal(shape)
    their_pool = getattr(torch.nn.functional, f"avg_pool{dims}d")
    _compare_with_torch(lambda t: _avg_pool(dims)(t, **arguments),
                        lambda t: their_pool(t, **arguments), array, layout)


@pytest.mark.parametrize("divisor_override", [1, 3])
def test_avg_pool2d_divisor_override_matches_torch(divisor_override):
    torch = pytest.importorskip("torch")
    array = np.random.default_rng(3).standard_normal((2, 3, 7, 6))
    arguments = {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                 "divisor_override": divisor_override}
    _compare_with_torch(lambda t: F.avg_pool2d(t, **arguments),
                        lambda t: torch.nn.functional.avg_pool2d(t, **arguments), array)


@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_adaptive_avg_pool_matches_torch(data, layout):
    torch = pytest.importorskip("torch")
    height, width = data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9))
    output_size = data.draw(st.one_of(
        st.integers(1, min(height, width) + 2),
        st.tuples(st.one_of(st.none(), st.integers(1, height + 2)), st.integers(1, width))))
    array = np.random.default_rng(4).standard_normal((2, 3, height, width))
    _compare_with_torch(lambda t: F.adaptive_avg_pool2d(t, output_size),
                        lambda t: torch.nn.functional.adaptive_avg_pool2d(t, output_size),
                        array, layout)
    length = data.draw(st.integers(1, width + 2))
    _compare_with_torch(lambda t: F.adaptive_avg_pool1d(t[:, :, 0], length),
                        lambda t: torch.nn.functional.adaptive_avg_pool1d(t[:, :, 0], length),
                        array, layout)


def test_pooling_on_unbatched_inputs_matches_torch():
    torch = pytest.importorskip("torch")
    array = np.random.default_rng(5).standard_normal((3, 7, 8))
    _compare_with_torch(lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True),
                        lambda t: torch.nn.functional.max_pool2d(t, 3, 2, 1,
                                                                 return_indices=True), array)
    _compare_with_torch(lambda t: F.avg_pool1d(t[0], 2),
                        lambda t: torch.nn.functional.avg_pool1d(t[0], 2), array)
    _compare_with_torch(lambda t: F.adaptive_avg_pool2d(t, (2, 3)),
                        lambda t: torch.nn.functional.adaptive_avg_pool2d(t, (2, 3)), array)


@pytest.mark.parametrize("chunk_bytes", [1, 3 * 81 * 8])
def test_pooling_in_chunks_of_planes_matches_torch(monkeypatch, chunk_bytes):
    """by_planes splits a NumPy tap loop into chunks of planes (one plane each, or three,
    leaving a shorter last chunk): the results are the same."""
    from minigrad.kernels import windows

    monkeypatch.setattr(windows, "CHUNK_BYTES", chunk_bytes)
    torch = pytest.importorskip("torch")
    array = np.random.default_rng(8).standard_normal((2, 5, 9, 9))
    _compare_with_torch(lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True),
                        lambda t: torch.nn.functional.max_pool2d(t, 3, 2, 1,
                                                                 return_indices=True), array)
    _compare_with_torch(lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True),
                        lambda t: torch.nn.functional.avg_pool2d(t, 3, 2, 1, ceil_mode=True),
                        array)


def test_max_pool_propagates_nan_like_torch():
    torch = pytest.importorskip("torch")
    array = np.arange(16.0).reshape(1, 1, 4, 4)
    array[0, 0, 1, 0] = np.nan
    out = F.max_pool2d(make_tensor(array), 2).numpy()
    np.testing.assert_array_equal(out, torch.nn.functional.max_pool2d(torch.tensor(array), 2))


POOL_MODULES = {  # name -> arguments, the same for both libraries
    "MaxPool2d": ((3, 2, 1), {"ceil_mode": True}),
    "MaxPool1d": ((2,), {}),
    "AvgPool2d": (((2, 3),), {"padding": 1, "count_include_pad": False}),
    "AvgPool1d": ((3, 1, 1), {}),
    "AdaptiveAvgPool2d": (((2, None),), {}),
    "AdaptiveAvgPool1d": ((3,), {}),
}


def test_max_pool_window_over_padding_only_is_minus_inf_like_torch():
    torch = pytest.importorskip("torch")
    x = make_tensor(np.zeros((1, 1, 1, 1)), requires_grad=True)
    arguments = {"kernel_size": (2, 1), "stride": 1, "padding": (1, 0), "dilation": (2, 1)}
    out = F.max_pool2d(x, **arguments)
    expected = torch.nn.functional.max_pool2d(torch.zeros(1, 1, 1, 1), **arguments)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())  # -inf
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


@pytest.mark.parametrize("name", list(POOL_MODULES))
def test_pool_modules_match_torch(name):
    torch = pytest.importorskip("torch")
    args, kwargs = POOL_MODULES[name]
    module, reference = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args,
                                                                                 **kwargs)
    assert repr(module) == repr(reference)
    dims = 1 if name.endswith("1d") else 2
    array = np.random.default_rng(6).standard_normal((2, 3) + (7,) * dims)
    _compare_with_torch(module, reference, array)


def test_max_pool_module_return_indices():
    torch = pytest.importorskip("torch")
    array = np.random.default_rng(7).standard_normal((2, 2, 6, 5))
    _compare_with_torch(nn.MaxPool2d(2, return_indices=True),
                        torch.nn.MaxPool2d(2, return_indices=True), array)


# ----------------------------------------------------------------------------- errors


def test_pooling_errors_name_the_op_and_the_shapes():
    x = make_tensor(np.zeros((1, 2, 4, 4)))
    with pytest.raises(RuntimeError, match=r"max_pool2d: padding should be at most half of "
                                           r"kernel_size, got padding=\(2, 2\)"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match=r"avg_pool2d: input of shape \(1, 2, 4, 4\) gives "
                                           r"an output of spatial size \(0, 0\), which is "
                                           r"too small"):
        F.avg_pool2d(x, 5)
    with pytest.raises(RuntimeError, match=r"max_pool1d: expected a 2-D \(unbatched\) or 3-D "
                                           r"\(batched\) input, got shape \(1, 2, 4, 4\)"):
        F.max_pool1d(x, 2)
    with pytest.raises(ValueError, match=r"max_pool2d: kernel_size must be at least 1"):
        F.max_pool2d(x, 0)
    with pytest.raises(ValueError, match=r"adaptive_avg_pool2d: output_size must be an int or "
                                         r"a tuple of 2"):
        F.adaptive_avg_pool2d(x, (1, 2, 3))
    with pytest.raises(RuntimeError, match=r"avg_pool2d: expected a floating point input"):
        F.avg_pool2d(make_tensor(np.zeros((1, 2, 4, 4), dtype=np.int64)), 2)
