"""Batch, group and RMS normalisation: gradient checks (first and second order, float64)
over drawn shapes, PyTorch as the oracle for the functions and the modules (training
steps, running statistics, evaluation, state_dict names), and errors."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, OP_SETTINGS, layouts, make_tensor, test_device
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

pytestmark = pytest.mark.device


def _batch_shapes():
    """(N, C, *) with at least two values per channel."""
    return st.tuples(st.integers(2, 3), st.integers(1, 3)).flatmap(
        lambda nc: st.lists(st.integers(1, 3), max_size=2).map(lambda rest: nc + tuple(rest)))


def _leaf(shape, seed, layout="contiguous", scale=1.0, offset=0.0):
    array = np.random.default_rng(seed).standard_normal(shape) * scale + offset
    return make_tensor(array, requires_grad=True, layout=layout)


# ----------------------------------------------------------------------------- gradients


@OP_SETTINGS
@given(shape=_batch_shapes(), layout=layouts(), affine=st.booleans(), seed=st.integers(0, 99))
def test_batch_norm_training_gradcheck(shape, layout, affine, seed):
    x = _leaf(shape, seed, layout)
    params = (_leaf(shape[1], seed + 1), _leaf(shape[1], seed + 2)) if affine else ()

    def normalise(t, *affine_params):
        return F.batch_norm(t, None, None, *affine_params, training=True)

    assert mg.autograd.gradcheck(normalise, (x, *params))


@FEW_EXAMPLES
@given(shape=_batch_shapes(), seed=st.integers(0, 99))
def test_batch_norm_gradgradcheck(shape, seed):
    x, weight, bias = _leaf(shape, seed), _leaf(shape[1], seed + 1), _leaf(shape[1], seed + 2)
    running_mean = make_tensor(np.zeros(shape[1]))
    running_var = make_tensor(np.ones(shape[1]) * 2)
    assert mg.autograd.gradgradcheck(
        lambda *t: F.batch_norm(t[0], None, None, *t[1:], training=True), (x, weight, bias))
    assert mg.autograd.gradgradcheck(
        lambda *t: F.batch_norm(t[0], running_mean, running_var, *t[1:]), (x, weight, bias))


@OP_SETTINGS
@given(data=st.data(), layout=layouts(), seed=st.integers(0, 99))
def test_group_norm_gradcheck(data, layout, seed):
    groups = data.draw(st.integers(1, 3))
    channels = groups * data.draw(st.integers(1, 2))
    shape = (data.draw(st.integers(1, 2)), channels) + tuple(
        data.draw(st.lists(st.integers(1, 3), max_size=2)))
    if np.prod(shape[1:]) // groups < 2:  # one value per group: the variance is 0
        shape = shape + (2,)
    x, weight, bias = _leaf(shape, seed, layout), _leaf(channels, seed + 1), \
        _leaf(channels, seed + 2)
    assert mg.autograd.gradcheck(lambda *t: F.group_norm(t[0], groups, *t[1:]),
                                 (x, weight, bias))
    assert mg.autograd.gradgradcheck(lambda *t: F.group_norm(t[0], groups, *t[1:]),
                                     (x, weight, bias))


@OP_SETTINGS
@given(data=st.data(), layout=layouts(), seed=st.integers(0, 99))
def test_rms_norm_gradcheck(data, layout, seed):
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    normalized = shape[data.draw(st.integers(0, len(shape) - 1)):]
    x, weight = _leaf(shape, seed, layout), _leaf(normalized, seed + 1)
    assert mg.autograd.gradcheck(lambda *t: F.rms_norm(t[0], normalized, t[1], 1e-3),
                                 (x, weight))
    assert mg.autograd.gradgradcheck(lambda t: F.rms_norm(t, normalized, eps=1e-3), (x,))


# ----------------------------------------------------------------------------- PyTorch oracle


def _close(ours, theirs, tolerance=1e-10):
    np.testing.assert_allclose(ours.numpy() if hasattr(ours, "numpy") else ours,
                               theirs.detach().numpy(), rtol=tolerance, atol=tolerance)


BATCH_NORMS = [("BatchNorm1d", (4, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (3, 3, 4, 2))]


@pytest.mark.parametrize("name, shape", BATCH_NORMS)
@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("affine, bias, track", [(True, True, True), (False, True, True),
                                                 (True, False, True), (True, True, False)])
def test_batch_norm_modules_match_torch_in_training_and_evaluation(name, shape, momentum,
                                                                   affine, bias, track):
    """Three training steps (outputs, input and parameter gradients, running statistics
    with the unbiased variance, num_batches_tracked), then evaluation; the state_dict has
    PyTorch's names, in PyTorch's order."""
    torch = pytest.importorskip("torch")
    kwargs = {"momentum": momentum, "affine": affine, "track_running_stats": track,
              "bias": bias}
    ours = getattr(nn, name)(shape[1], **kwargs).double().to(test_device())
    theirs = getattr(torch.nn, name)(shape[1], **kwargs).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(0)
    for step in range(3):
        array = rng.standard_normal(shape) * (step + 1) + step
        x, reference = make_tensor(array, requires_grad=True), torch.tensor(array,
                                                                           requires_grad=True)
        out, expected = ours(x), theirs(reference)
        _close(out, expected)
        upstream = rng.standard_normal(shape)
        out.backward(make_tensor(upstream))
        expected.backward(torch.tensor(upstream))
        _close(x.grad, reference.grad)
        for mine, reference in zip(ours.parameters(), theirs.parameters()):
            _close(mine.grad, reference.grad)
    for key, value in theirs.state_dict().items():
        _close(ours.state_dict()[key], value)
    ours.eval()
    theirs.eval()
    array = rng.standard_normal(shape)
    _close(ours(make_tensor(array)), theirs(torch.tensor(array)))


def test_batch_norm_loads_torch_weights_and_buffers():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.BatchNorm2d(3)
    theirs(torch.randn(4, 3, 2, 2) * 3 + 1)  # move the running statistics
    with torch.no_grad():
        theirs.weight.uniform_()
    ours = nn.BatchNorm2d(3).to(test_device())
    ours.load_state_dict({k: mg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert ours.num_batches_tracked.dtype is mg.int64 and ours.num_batches_tracked.item() == 1
    ours.eval()
    theirs.eval()
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 4)).astype(np.float32)
    _close(ours(make_tensor(x)), theirs(torch.tensor(x)), tolerance=1e-6)


def test_batch_norm_functional_updates_running_statistics_like_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 2, 3))
    ours = [make_tensor(np.zeros(2)), make_tensor(np.ones(2))]
    theirs = [torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)]
    out = F.batch_norm(make_tensor(x), *ours, training=True, momentum=0.3, eps=1e-3)
    expected = torch.nn.functional.batch_norm(torch.tensor(x), *theirs, training=True,
                                              momentum=0.3, eps=1e-3)
    _close(out, expected)
    for mine, reference in zip(ours, theirs):
        _close(mine, reference)


@pytest.mark.parametrize("shape, groups", [((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 4), 4)])
def test_group_norm_matches_torch(shape, groups):
    torch = pytest.importorskip("torch")
    ours, theirs = nn.GroupNorm(groups, shape[1]).double().to(test_device()), \
        torch.nn.GroupNorm(groups, shape[1]).double()
    with torch.no_grad():
        theirs.weight.uniform_()
        theirs.bias.uniform_()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: mg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    array = np.random.default_rng(3).standard_normal(shape)
    x, reference = make_tensor(array, requires_grad=True), torch.tensor(array,
                                                                       requires_grad=True)
    out, expected = ours(x), theirs(reference)
    _close(out, expected)
    upstream = np.random.default_rng(4).standard_normal(shape)
    out.backward(make_tensor(upstream))
    expected.backward(torch.tensor(upstream))
    _close(x.grad, reference.grad)
    _close(ours.weight.grad, theirs.weight.grad)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("normalized_shape, eps", [(5, None), ((3, 5), 1e-4), ([5], 0.1)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rms_norm_matches_torch(normalized_shape, eps, dtype):
    """eps=None takes the dtype's machine epsilon, as PyTorch."""
    torch = pytest.importorskip("torch")
    ours = nn.RMSNorm(normalized_shape, eps=eps).to(getattr(mg, dtype)).to(test_device())
    theirs = torch.nn.RMSNorm(normalized_shape, eps=eps).to(getattr(torch, dtype))
    with torch.no_grad():
        theirs.weight.uniform_()
    ours.load_state_dict({k: mg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    # small values, where eps matters
    array = (np.random.default_rng(5).standard_normal((2, 3, 5)) * 1e-4).astype(dtype)
    x, reference = make_tensor(array, requires_grad=True), torch.tensor(array,
                                                                       requires_grad=True)
    out, expected = ours(x), theirs(reference)
    tolerance = 1e-10 if dtype == "float64" else 1e-5
    _close(out, expected, tolerance)
    out.sum().backward()
    expected.sum().backward()
    _close(x.grad, reference.grad, tolerance)
    _close(ours.weight.grad, theirs.weight.grad, tolerance)
    shape = ours.normalized_shape  # a tuple: torch's F.rms_norm takes no int
    _close(F.rms_norm(x.detach(), shape, eps=eps),
           torch.nn.functional.rms_norm(reference.detach(), shape, eps=eps), tolerance)


# ----------------------------------------------------------------------------- errors


def test_norm_errors_name_the_op_and_the_shapes():
    with pytest.raises(ValueError, match=r"BatchNorm2d: expected 4D input, got shape \(2, 3\)"):
        nn.BatchNorm2d(3)(mg.zeros(2, 3))
    with pytest.raises(ValueError, match=r"BatchNorm1d: expected 2D or 3D input"):
        nn.BatchNorm1d(3)(mg.zeros(2, 3, 1, 1))
    with pytest.raises(ValueError, match=r"batch_norm: expected more than 1 value per channel "
                                         r"when training, got input of shape \(1, 3\)"):
        nn.BatchNorm1d(3)(mg.zeros(1, 3))
    with pytest.raises(RuntimeError, match=r"batch_norm: expected running_mean of shape \(4,\) "
                                           r"for input of shape \(2, 4\), got \(3,\)"):
        nn.BatchNorm1d(3).eval()(mg.zeros(2, 4))
    with pytest.raises(RuntimeError, match=r"batch_norm: running_mean and running_var must be "
                                           r"given when training=False"):
        F.batch_norm(mg.zeros(2, 3), None, None)
    with pytest.raises(ValueError, match=r"GroupNorm: num_channels=6 must be divisible by "
                                         r"num_groups=4"):
        nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match=r"group_norm: expected the 6 channels of the input "
                                           r"of shape \(2, 6, 3\) to be divisible by "
                                           r"num_groups=4"):
        F.group_norm(mg.zeros(2, 6, 3), 4)
    with pytest.raises(RuntimeError, match=r"rms_norm: input of shape \(2, 3\) does not end "
                                           r"with normalized_shape \(4,\)"):
        F.rms_norm(mg.zeros(2, 3), 4)


def test_batch_norm_eval_without_running_statistics_uses_the_batch():
    torch = pytest.importorskip("torch")
    array = np.random.default_rng(6).standard_normal((4, 3))
    ours = nn.BatchNorm1d(3, track_running_stats=False).double().to(test_device()).eval()
    theirs = torch.nn.BatchNorm1d(3, track_running_stats=False).double().eval()
    assert ours.running_mean is None and list(ours.state_dict()) == ["weight", "bias"]
    _close(ours(make_tensor(array)), theirs(torch.tensor(array)))


def test_batch_norm_reset_and_repr():
    layer = nn.BatchNorm2d(2, momentum=None)
    layer(mg.randn(3, 2, 2, 2) + 5)
    assert layer.num_batches_tracked.item() == 1 and layer.running_mean.numpy().min() > 4
    layer.reset_running_stats()
    np.testing.assert_array_equal(layer.running_mean.numpy(), 0.0)
    np.testing.assert_array_equal(layer.running_var.numpy(), 1.0)
    assert layer.num_batches_tracked.item() == 0
    assert repr(layer) == ("BatchNorm2d(2, eps=1e-05, momentum=None, affine=True, bias=True, "
                           "track_running_stats=True)")
