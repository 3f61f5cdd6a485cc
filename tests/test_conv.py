"""Convolutions: F.conv1d/conv2d gradient checks (first and second order, float64) over
drawn shapes, strides, paddings ("same"/"valid" included), dilations and groups; the
fast path (im2col + matmul) against its reference twin; PyTorch as the oracle for the
functions and the modules (forward, backward, initialisation, padding modes); errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, OP_SETTINGS, layouts, make_tensor, test_device
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from minigrad.kernels import conv as conv_kernels
from minigrad.kernels.windows import Window2d
from minigrad.nn.functional.conv import conv_padding

pytestmark = pytest.mark.device


@st.composite
def conv_cases(draw, dims: int = 2, max_batch: int = 2, max_group_channels: int = 2,
               max_extra: int = 3):
    """A valid convolution: shapes and arguments as F.conv{dims}d takes them."""
    groups = draw(st.integers(1, 3))
    in_channels = groups * draw(st.integers(1, max_group_channels))
    out_channels = groups * draw(st.integers(1, max_group_channels))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    kind = draw(st.sampled_from(["ints", "same", "valid"]))
    stride = (1,) * dims if kind == "same" else tuple(draw(st.integers(1, 3))
                                                      for _ in range(dims))
    pads = tuple(draw(st.integers(0, 2)) for _ in range(dims)) if kind == "ints" else \
        (0,) * dims
    # every spatial size fits the dilated kernel once padded
    sizes = tuple(max(1, d * (k - 1) + 1 - 2 * p) + draw(st.integers(0, max_extra))
                  for k, d, p in zip(kernel, dilation, pads))
    return {
        "input_shape": (draw(st.integers(1, max_batch)), in_channels) + sizes,
        "weight_shape": (out_channels, in_channels // groups) + kernel,
        "bias": draw(st.booleans()),
        "stride": stride[0] if len(set(stride)) == 1 and draw(st.booleans()) else stride,
        "padding": kind if kind != "ints" else pads,
        "dilation": dilation,
        "groups": groups,
    }


def _arguments(case: dict) -> dict:
    return {name: case[name] for name in ("stride", "padding", "dilation", "groups")}


def _leaves(case: dict, rng, layout: str = "contiguous", dtype=np.float64):
    x = make_tensor(rng.standard_normal(case["input_shape"]).astype(dtype),
                    requires_grad=True, layout=layout)
    w = make_tensor(rng.standard_normal(case["weight_shape"]).astype(dtype),
                    requires_grad=True, layout=layout)
    b = make_tensor(rng.standard_normal(case["weight_shape"][0]).astype(dtype),
                    requires_grad=True) if case["bias"] else None
    return x, w, b


def _functional(dims: int):
    return F.conv2d if dims == 2 else F.conv1d


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("dims", [1, 2])
@OP_SETTINGS
@given(case=conv_cases(max_extra=2), layout=layouts(), seed=st.integers(0, 2**16))
def test_conv_gradcheck(dims, case, layout, seed):
    if dims == 1:
        case = _as_1d(case)
    x, w, b = _leaves(case, np.random.default_rng(seed), layout)
    conv = _functional(dims)
    inputs = (x, w) if b is None else (x, w, b)
    assert mg.autograd.gradcheck(lambda *t: conv(*t, **_arguments(case)), inputs)


@pytest.mark.parametrize("dims", [1, 2])
@FEW_EXAMPLES
@given(case=conv_cases(max_batch=1, max_group_channels=1, max_extra=1),
       seed=st.integers(0, 2**16))
def test_conv_gradgradcheck(dims, case, seed):
    """Second derivatives through the three Functions (input and weight gradients)."""
    if dims == 1:
        case = _as_1d(case)
    x, w, b = _leaves(case, np.random.default_rng(seed))
    inputs = (x, w) if b is None else (x, w, b)
    conv = _functional(dims)
    assert mg.autograd.gradgradcheck(lambda *t: conv(*t, **_arguments(case)), inputs)


def _as_1d(case: dict) -> dict:
    """The 2-D case's last spatial dim as a 1-D case."""
    one = dict(case)
    one["input_shape"] = case["input_shape"][:2] + case["input_shape"][-1:]
    one["weight_shape"] = case["weight_shape"][:2] + case["weight_shape"][-1:]
    for name in ("stride", "padding", "dilation"):
        value = case[name]
        one[name] = value if isinstance(value, (int, str)) else (value[-1],)
    return one


# ----------------------------------------------------------------------------- fast path vs twin


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@OP_SETTINGS
@given(case=conv_cases(max_batch=3, max_group_channels=3), seed=st.integers(0, 2**16))
def test_im2col_path_matches_reference_twin(dtype, case, seed):
    """conv2d, its input gradient and its weight gradient: im2col + one matmul per group
    against the tap-by-tap sums, on the same arrays."""
    rng = np.random.default_rng(seed)
    x, w, b = (t.array if t is not None else None for t in _leaves(case, rng, dtype=dtype))
    kernel = case["weight_shape"][2:]
    stride = case["stride"] if isinstance(case["stride"], tuple) else (case["stride"],) * 2
    pads = conv_padding(case["padding"], kernel, stride, case["dilation"], "test", ValueError)
    window = Window2d(kernel, stride, case["dilation"], pads)
    groups = case["groups"]
    out = conv_kernels.conv2d(x, w, b, window, groups)
    g = make_tensor(rng.standard_normal(out.shape).astype(dtype)).array
    tolerance = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-10,
                                                                         "atol": 1e-12}
    pairs = [
        (out, conv_kernels.conv2d_twin(x, w, b, window, groups)),
        (conv_kernels.conv2d_input_grad(g, w, x.shape[-2:], window, groups),
         conv_kernels.conv2d_input_grad_twin(g, w, x.shape[-2:], window, groups)),
        (conv_kernels.conv2d_weight_grad(x, g, window, groups),
         conv_kernels.conv2d_weight_grad_twin(x, g, window, groups)),
    ]
    for fast, twin in pairs:
        assert fast.dtype == twin.dtype == dtype
        assert fast.shape == twin.shape
        np.testing.assert_allclose(mg.tensor(fast).numpy(), mg.tensor(twin).numpy(), **tolerance)


def test_numpy_mode_runs_the_twin_through_the_public_api():
    rng = np.random.default_rng(0)
    x = make_tensor(rng.standard_normal((2, 4, 7, 6)), requires_grad=True)
    w = make_tensor(rng.standard_normal((6, 2, 3, 2)), requires_grad=True)
    results = []
    for mode in ("auto", "numpy"):
        x.grad = w.grad = None
        with mg.kernels.mode(mode):
            out = F.conv2d(x, w, stride=(2, 1), padding=1, groups=2)
            (out * out).sum().backward()
        results.append((out.numpy(), x.grad.numpy(), w.grad.numpy()))
    for fast, twin in zip(*results):
        np.testing.assert_allclose(fast, twin, rtol=1e-12, atol=1e-12)


def test_float16_is_computed_in_float32():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    half = [make_tensor(a, requires_grad=True, dtype=mg.float16) for a in (x, w)]
    single = [make_tensor(a.astype(np.float16).astype(np.float32), requires_grad=True)
              for a in (x, w)]
    for inputs in (half, single):
        F.conv2d(*inputs, padding=1).sum().backward()
    out = F.conv2d(*half, padding=1)
    assert out.dtype is mg.float16 and half[0].grad.dtype is mg.float16
    expected = F.conv2d(*single, padding=1).numpy()
    np.testing.assert_allclose(out.numpy(), expected, rtol=2e-3, atol=2e-3)
    for mine, reference in zip(half, single):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=2e-3,
                                   atol=2e-2)


# ----------------------------------------------------------------------------- PyTorch oracle


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # PyTorch's note on its own copy
@pytest.mark.parametrize("dims", [1, 2])
@FEW_EXAMPLES
@given(case=conv_cases(max_batch=3, max_group_channels=3, max_extra=5), layout=layouts(),
       seed=st.integers(0, 2**16))
def test_conv_matches_torch(dims, case, layout, seed):
    torch = pytest.importorskip("torch")
    if dims == 1:
        case = _as_1d(case)
    rng = np.random.default_rng(seed)
    ours = _leaves(case, rng, layout)
    theirs = [None if t is None else torch.tensor(t.numpy(), requires_grad=True) for t in ours]
    out = _functional(dims)(*ours, **_arguments(case))
    expected = getattr(torch.nn.functional, f"conv{dims}d")(*theirs, **_arguments(case))
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    upstream = rng.standard_normal(out.shape)
    out.backward(make_tensor(upstream))
    expected.backward(torch.tensor(upstream))
    for mine, reference in zip(ours, theirs):
        if mine is not None:
            np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10,
                                       atol=1e-12)


def test_conv2d_unbatched_input_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 6, 5)), rng.standard_normal((4, 3, 3, 3))
    out = F.conv2d(make_tensor(x), make_tensor(w), padding="same")
    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding="same")
    assert out.shape == (4, 6, 5)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims", [1, 2])
def test_conv_modules_match_torch_with_their_weights(padding_mode, dims):
    """The same weights give the same outputs and gradients for every padding mode, and
    the state_dict names and shapes are PyTorch's, so weights port both ways."""
    torch = pytest.importorskip("torch")
    ours_class, theirs_class = (nn.Conv2d, torch.nn.Conv2d) if dims == 2 else \
        (nn.Conv1d, torch.nn.Conv1d)
    kwargs = {"stride": 1, "padding": 2, "dilation": 1, "groups": 2, "padding_mode": padding_mode}
    theirs = theirs_class(4, 6, 3, **kwargs).double()
    ours = ours_class(4, 6, 3, **kwargs).double().to(test_device())
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state)
    ours.load_state_dict({k: mg.tensor(v.numpy()) for k, v in state.items()})
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4) + (7,) * dims)
    mine, reference = make_tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = ours(mine), theirs(reference)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    upstream = rng.standard_normal(out.shape)
    out.backward(make_tensor(upstream))
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), rtol=1e-10)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv2d_module_padding_same_with_even_kernel_matches_torch():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Conv2d(2, 3, (4, 2), padding="same", dilation=(1, 3)).double()
    ours = nn.Conv2d(2, 3, (4, 2), padding="same", dilation=(1, 3)).double().to(test_device())
    ours.load_state_dict({k: mg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((1, 2, 6, 9))
    out = ours(make_tensor(x))
    assert out.shape == (1, 3, 6, 9)
    np.testing.assert_allclose(out.numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("module, fan_in", [(lambda: nn.Conv2d(6, 16, 5), 150),
                                            (lambda: nn.Conv2d(8, 4, (3, 2), groups=4), 12),
                                            (lambda: nn.Conv1d(3, 5, 7), 21)])
def test_conv_initialisation_is_pytorch_default(module, fan_in):
    """kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight,
    and the bias takes the same bound; the draws fill the range (not all zero)."""
    mg.manual_seed(0)
    layer = module()
    bound = 1 / math.sqrt(fan_in)
    for param in (layer.weight, layer.bias):
        values = param.numpy()
        assert values.dtype == np.float32
        assert np.all(np.abs(values) <= bound)
    weights = layer.weight.numpy().ravel()
    if weights.size >= 100:  # enough draws to see the spread of a uniform distribution
        assert weights.max() > 0.8 * bound and weights.min() < -0.8 * bound
        assert abs(weights.std() - bound / math.sqrt(3)) < 0.15 * bound


def test_conv_module_repr_and_attributes_follow_pytorch():
    layer = nn.Conv2d(1, 6, 5, stride=2, padding=1, bias=False)
    assert layer.kernel_size == (5, 5) and layer.stride == (2, 2) and layer.padding == (1, 1)
    assert layer.bias is None and [n for n, _ in layer.named_parameters()] == ["weight"]
    assert repr(layer) == "Conv2d(1, 6, kernel_size=(5, 5), stride=(2, 2), padding=(1, 1), " \
                          "bias=False)"
    assert repr(nn.Conv1d(4, 4, 3, padding="same", groups=2, padding_mode="reflect")) == (
        "Conv1d(4, 4, kernel_size=(3,), stride=(1,), padding=same, groups=2, "
        "padding_mode=reflect)")


def test_conv_module_trains_a_float64_model_on_any_layout():
    """A conv module is an ordinary Module: to(dtype), parameters for an optimizer, and
    its loss goes down."""
    mg.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 5 * 5, 1)).double().to(test_device())
    rng = np.random.default_rng(0)
    x = make_tensor(rng.standard_normal((8, 1, 5, 5)), layout="transposed")
    target = make_tensor(rng.standard_normal((8, 1)))
    optimizer = mg.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = ((model(x) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


# ----------------------------------------------------------------------------- errors


def _error(call, match):
    with pytest.raises((RuntimeError, ValueError, TypeError), match=match):
        call()


def test_conv_errors_name_the_op_the_shapes_and_what_was_expected():
    x = make_tensor(np.zeros((2, 3, 8, 8)))
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((6, 1, 3, 3)))),
           r"conv2d: given groups=1 and weight of shape \(6, 1, 3, 3\), expected input of "
           r"shape \(2, 3, 8, 8\) to have 1 channels, but got 3")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 1, 3, 3))), groups=3),
           r"conv2d: groups=3 must divide the weight's 4 output channels")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 3, 9, 3)))),
           r"conv2d: the padded input's spatial size \(8, 8\).*smaller than the kernel's "
           r"extent \(9, 3\)")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 3, 3, 3))), dilation=5),
           r"kernel's extent \(11, 11\)")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 3, 3)))),
           r"conv2d: expected a 4-D weight")
    _error(lambda: F.conv2d(make_tensor(np.zeros((3, 8))), make_tensor(np.zeros((4, 3, 3, 3)))),
           r"conv2d: expected a 3-D \(unbatched\) or 4-D \(batched\) input, got shape \(3, 8\)")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 3, 3, 3))), make_tensor(np.zeros(5))),
           r"conv2d: expected a bias of shape \(4,\)")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 3, 3, 3)), dtype=mg.float32)),
           r"conv2d: input, weight and bias must have one dtype and device")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 3, 3, 3))), stride=2, padding="same"),
           r"conv2d: padding='same' is not supported for strided convolutions")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 3, 3, 3))), padding="full"),
           r"conv2d: invalid padding string 'full'")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 3, 3, 3))), stride=0),
           r"conv2d: stride must be at least 1")
    _error(lambda: F.conv2d(x, make_tensor(np.zeros((4, 3, 3, 3))), padding=(1, 1, 1)),
           r"conv2d: padding must be an int or a tuple of 2 ints")
    _error(lambda: F.conv1d(make_tensor(np.zeros((2, 3, 8))), make_tensor(np.zeros((4, 2, 3)))),
           r"conv1d: given groups=1 and weight of shape \(4, 2, 3\)")
    _error(lambda: F.conv2d(make_tensor(np.zeros((2, 3, 8, 8), dtype=np.int64)),
                            make_tensor(np.zeros((4, 3, 3, 3)))),
           r"conv2d: expected a floating point input, got minigrad.int64")


def test_conv_module_errors():
    _error(lambda: nn.Conv2d(3, 4, 3, groups=2), r"Conv2d: groups=2 must .*divide "
                                                 r"in_channels=3 and out_channels=4")
    _error(lambda: nn.Conv2d(4, 4, 3, stride=2, padding="same"),
           r"Conv2d: padding='same' is not supported for strided convolutions")
    _error(lambda: nn.Conv2d(4, 4, 3, padding_mode="mirror"), r"padding_mode must be one of")
    layer = nn.Conv2d(1, 1, 3, padding=3, padding_mode="reflect").to(test_device())
    _error(lambda: layer(make_tensor(np.zeros((1, 1, 3, 3)), dtype=mg.float32)),
           r"pad: mode 'reflect' pads at most 2 elements on a side of dim 3 of size 3, got "
           r"\(3, 3\)")
