"""Forward values of the convolutions (against the direct sum over taps), pooling (against
the window definition, with padding, dilation, ceil_mode and the avg divisors), the norms
(batch_norm with its running statistics, group_norm, layer_norm, rms_norm) and attention
with boolean, float and causal masks. No PyTorch needed (see numpy_oracle)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, OP_SETTINGS, floats, layouts
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_oracle import assert_forward, generic_arrays, softmax, tensor

import minigrad.nn.functional as F

pytestmark = pytest.mark.device


def output_length(size, kernel, stride, dilation, ceil_mode=False, padding=0):
    """Windows that fit; with ceil_mode a partial last window counts if it starts inside
    the input or its left padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    count = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (count - 1) * stride >= size + padding:
        count -= 1
    return count


def conv_direct(x, w, b, stride, padding, dilation, groups):
    """out[n, o, p] = b[o] + sum_{c, k} w[o, c, k] xpad[n, g(o) C_g + c, p s + k d] over
    the taps k of every spatial dim; padding is one (left, right) pair per spatial dim."""
    xpad = np.pad(x, [(0, 0), (0, 0)] + list(padding))
    kernel = w.shape[2:]
    out_size = [(xpad.shape[2 + d] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1
                for d in range(len(kernel))]
    in_per_group, out_per_group = x.shape[1] // groups, w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], *out_size))
    for n, o, *position in itertools.product(range(x.shape[0]), range(w.shape[0]),
                                             *map(range, out_size)):
        group = o // out_per_group
        acc = 0.0 if b is None else b[o]
        for c, *tap in itertools.product(range(in_per_group), *map(range, kernel)):
            source = tuple(p * s + k * d for p, s, k, d in zip(position, stride, tap, dilation))
            acc += w[(o, c, *tap)] * xpad[(n, group * in_per_group + c, *source)]
        out[(n, o, *position)] = acc
    return out


@st.composite
def conv_cases(draw, dims: int):
    groups = draw(st.integers(1, 2))
    in_channels, out_channels = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    padding = draw(st.sampled_from(["number", "same", "valid"]))
    stride = (1,) * dims if padding == "same" else tuple(draw(st.integers(1, 2))
                                                         for _ in range(dims))
    amounts = tuple(draw(st.integers(0, 2)) for _ in range(dims))
    size = tuple(draw(st.integers(d * (k - 1) + 1, 6)) for k, d in zip(kernel, dilation))
    if padding == "same":  # the extra element of an odd total goes right, as in PyTorch
        pairs = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                 for k, d in zip(kernel, dilation)]
        argument = "same"
    elif padding == "valid":
        pairs, argument = [(0, 0)] * dims, "valid"
    else:
        pairs, argument = [(p, p) for p in amounts], amounts
    x = draw(generic_arrays((draw(st.integers(1, 2)), in_channels) + size))
    w = draw(generic_arrays((out_channels, in_channels // groups) + kernel))
    b = draw(st.none() | generic_arrays((out_channels,)))
    return x, w, b, dict(stride=stride, padding=argument, dilation=dilation, groups=groups), pairs


@pytest.mark.parametrize("dims", [1, 2])
@OP_SETTINGS
@given(case=st.data(), layout=layouts())
def test_conv_against_the_direct_sum(dims, case, layout):
    x, w, b, arguments, pairs = case.draw(conv_cases(dims))
    expected = conv_direct(x, w, b, arguments["stride"], pairs, arguments["dilation"],
                           arguments["groups"])
    conv = F.conv1d if dims == 1 else F.conv2d
    got = conv(tensor(x, layout), tensor(w, layout), None if b is None else tensor(b),
               **arguments)
    assert_forward(got, expected)


@st.composite
def pool_cases(draw, dims: int, dilated: bool):
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    dilation = tuple(draw(st.integers(1, 2)) if dilated else 1 for _ in range(dims))
    size = tuple(draw(st.integers(d * (k - 1) + 1, 6)) for k, d in zip(kernel, dilation))
    x = draw(generic_arrays((draw(st.integers(1, 2)), 2) + size))
    return x, kernel, stride, padding, dilation, draw(st.booleans())


def windows(x, kernel, stride, padding, dilation, ceil_mode):
    """The output's spatial size, and for every output position (in row-major order) the
    in-range input positions of its window."""
    size = x.shape[2:]
    counts = tuple(output_length(n, k, s, d, ceil_mode, p)
                   for n, k, s, d, p in zip(size, kernel, stride, dilation, padding))
    positions = []
    for position in itertools.product(*map(range, counts)):
        taps = [[i * s - p + j * d for j in range(k)]
                for i, s, p, k, d in zip(position, stride, padding, kernel, dilation)]
        inside = [[t for t in axis if 0 <= t < n] for axis, n in zip(taps, size)]
        positions.append((position, list(itertools.product(*inside))))
    return counts, positions


def per_position(values, batch_shape, counts):
    """Arrays of batch_shape, one per output position in row-major order, as one array of
    batch_shape + counts."""
    return np.moveaxis(np.array(values), 0, -1).reshape(batch_shape + counts)


@pytest.mark.parametrize("dims", [1, 2])
@OP_SETTINGS
@given(data=st.data(), layout=layouts())
def test_max_pool(dims, data, layout):
    """The largest value of each window and its flat position in the input plane."""
    x, kernel, stride, padding, dilation, ceil_mode = data.draw(pool_cases(dims, True))
    counts, positions = windows(x, kernel, stride, padding, dilation, ceil_mode)
    values, indices = [], []
    for _, taps in positions:
        planes = x[(..., *zip(*taps))]
        best = planes.argmax(axis=-1)
        values.append(np.take_along_axis(planes, best[..., None], -1)[..., 0])
        indices.append(np.ravel_multi_index(tuple(zip(*taps)), x.shape[2:])[best])
    pool = F.max_pool1d if dims == 1 else F.max_pool2d
    out, picked = pool(tensor(x, layout), kernel, stride, padding, dilation, ceil_mode,
                       return_indices=True)
    assert_forward(out, per_position(values, x.shape[:2], counts))
    assert_forward(picked, per_position(indices, x.shape[:2], counts).astype(np.int64))


@pytest.mark.parametrize("dims", [1, 2])
@OP_SETTINGS
@given(data=st.data(), layout=layouts(), count_include_pad=st.booleans(),
       divisor_override=st.sampled_from([None, 3]))
def test_avg_pool(dims, data, layout, count_include_pad, divisor_override):
    """Window sum / divisor: divisor_override, else the window's size clipped to the padded
    input (count_include_pad) or to the input itself."""
    if dims == 1 and divisor_override is not None:
        return  # avg_pool1d has no divisor_override, as in PyTorch
    x, kernel, stride, padding, _, ceil_mode = data.draw(pool_cases(dims, False))
    size = x.shape[2:]
    counts, positions = windows(x, kernel, stride, padding, (1,) * dims, ceil_mode)
    means = []
    for position, taps in positions:
        total = x[(..., *zip(*taps))].sum(axis=-1)
        padded_size = math.prod(min(i * s - p + k, n + p) - (i * s - p)
                                for i, s, p, k, n in zip(position, stride, padding, kernel, size))
        divisor = divisor_override or (padded_size if count_include_pad else len(taps))
        means.append(total / divisor)
    expected = per_position(means, x.shape[:2], counts)
    kwargs = dict(ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    if dims == 2:
        kwargs["divisor_override"] = divisor_override
    pool = F.avg_pool1d if dims == 1 else F.avg_pool2d
    assert_forward(pool(tensor(x, layout), kernel, stride, padding, **kwargs), expected)


@pytest.mark.parametrize("dims", [1, 2])
@OP_SETTINGS
@given(data=st.data(), layout=layouts())
def test_adaptive_avg_pool(dims, data, layout):
    """Output i averages input floor(i n / m) .. ceil((i + 1) n / m) - 1."""
    size = tuple(data.draw(st.integers(2, 7)) for _ in range(dims))
    out_size = tuple(data.draw(st.integers(1, n + 1)) for n in size)
    x = data.draw(generic_arrays((2, 2) + size))
    expected = np.empty(x.shape[:2] + out_size)
    for position in itertools.product(*map(range, out_size)):
        bounds = [slice(i * n // m, -(-(i + 1) * n // m))
                  for i, n, m in zip(position, size, out_size)]
        expected[(..., *position)] = x[(..., *bounds)].mean(axis=tuple(range(2, 2 + dims)))
    pool = F.adaptive_avg_pool1d if dims == 1 else F.adaptive_avg_pool2d
    assert_forward(pool(tensor(x, layout), out_size[0] if dims == 1 else out_size), expected)


def normalized(x, axes, eps):
    """(x - mean) / sqrt(var + eps) over axes, var dividing by the element count."""
    mean = x.mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)


@OP_SETTINGS
@given(data=st.data(), spatial=st.integers(0, 2), training=st.booleans(), layout=layouts())
def test_batch_norm_and_its_running_statistics(data, spatial, training, layout):
    channels = data.draw(st.integers(2, 3))
    shape = (data.draw(st.integers(2, 3)), channels) + (3,) * spatial
    x = data.draw(generic_arrays(shape))
    weight, bias = data.draw(generic_arrays((channels,))), data.draw(generic_arrays((channels,)))
    running_mean = data.draw(generic_arrays((channels,)))
    running_var = data.draw(generic_arrays((channels,), 0.5, 2.0))
    axes = (0,) + tuple(range(2, x.ndim))
    stats = (1, channels) + (1,) * spatial
    if training:
        core = normalized(x, axes, 1e-3)
        n = x.size // channels
        batch_var = x.var(axis=axes) * n / (n - 1)
        mean_after = 0.75 * running_mean + 0.25 * x.mean(axis=axes)
        var_after = 0.75 * running_var + 0.25 * batch_var
    else:
        core = (x - running_mean.reshape(stats)) / np.sqrt(running_var.reshape(stats) + 1e-3)
        mean_after, var_after = running_mean, running_var
    expected = core * weight.reshape(stats) + bias.reshape(stats)
    mean_t, var_t = tensor(running_mean), tensor(running_var)
    got = F.batch_norm(tensor(x, layout), mean_t, var_t, tensor(weight), tensor(bias),
                       training=training, momentum=0.25, eps=1e-3)
    assert_forward(got, expected)
    assert_forward(mean_t, mean_after)
    assert_forward(var_t, var_after)


@OP_SETTINGS
@given(data=st.data(), groups=st.integers(1, 3), layout=layouts())
def test_group_norm(data, groups, layout):
    """Each group of C / G channels of each sample normalised together, then the
    per-channel affine."""
    channels = groups * data.draw(st.integers(1, 2))
    shape = (2, channels, data.draw(st.integers(2, 4)))
    x = data.draw(generic_arrays(shape))
    weight, bias = data.draw(generic_arrays((channels,))), data.draw(generic_arrays((channels,)))
    core = normalized(x.reshape(2, groups, -1), (2,), 1e-4).reshape(shape)
    expected = core * weight[:, None] + bias[:, None]
    got = F.group_norm(tensor(x, layout), groups, tensor(weight), tensor(bias), eps=1e-4)
    assert_forward(got, expected)


@OP_SETTINGS
@given(data=st.data(), normalized_dims=st.integers(1, 2), layout=layouts(),
       affine=st.booleans())
def test_layer_norm_and_rms_norm(data, normalized_dims, layout, affine):
    """layer_norm: normalised over the last dims, times weight plus bias (elementwise over
    those dims); rms_norm: x / sqrt(mean(x^2) + eps) times weight, eps defaulting to the
    dtype's machine epsilon."""
    shape = tuple(data.draw(st.integers(2, 4)) for _ in range(3))
    x = data.draw(generic_arrays(shape))
    last = shape[3 - normalized_dims:]
    axes = tuple(range(3 - normalized_dims, 3))
    weight, bias = data.draw(generic_arrays(last)), data.draw(generic_arrays(last))
    expected = normalized(x, axes, 1e-5) * weight + bias if affine else normalized(x, axes, 1e-5)
    params = (tensor(weight), tensor(bias)) if affine else ()
    assert_forward(F.layer_norm(tensor(x, layout), last, *params), expected)
    eps = np.finfo(np.float64).eps
    rms = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    assert_forward(F.rms_norm(tensor(x, layout), last, tensor(weight) if affine else None),
                   rms * weight if affine else rms)


@FEW_EXAMPLES
@given(data=st.data(), sizes=st.tuples(*[st.integers(2, 4)] * 3), layout=layouts(),
       mask_kind=st.sampled_from(["none", "bool", "float", "causal"]),
       scale=st.sampled_from([None, 0.3]))
def test_scaled_dot_product_attention(data, sizes, layout, mask_kind, scale):
    """softmax(q k^T * scale + mask) v, scale defaulting to 1 / sqrt(E); a boolean mask
    is True where a query may attend (each row here keeps one key or more); causal:
    query i sees keys 0..i."""
    length, source, embed = sizes
    q = data.draw(generic_arrays((2, length, embed)))
    k = data.draw(generic_arrays((2, source, embed)))
    v = data.draw(generic_arrays((2, source, 3)))
    scores = (q[:, :, None, :] * k[:, None, :, :]).sum(-1) * (
        1 / math.sqrt(embed) if scale is None else scale)
    keep = np.ones((length, source), dtype=bool)
    extra = np.zeros((length, source))
    if mask_kind == "bool":
        keep = data.draw(hnp.arrays(bool, (length, source)).filter(
            lambda m: bool(m.any(axis=1).all())))
    elif mask_kind == "causal":
        keep = np.arange(source)[None, :] <= np.arange(length)[:, None]
    elif mask_kind == "float":
        extra = data.draw(hnp.arrays(np.float64, (length, source), elements=floats(-2.0, 2.0)))
    weights = softmax(np.where(keep, scores + extra, -np.inf), -1)
    expected = (weights[..., None] * v[:, None, :, :]).sum(axis=-2)
    mask = {"bool": tensor(keep), "float": tensor(extra)}.get(mask_kind)
    arguments = (tensor(q, layout), tensor(k, layout), tensor(v))
    out = F.scaled_dot_product_attention(*arguments, attn_mask=mask,
                                         is_causal=mask_kind == "causal", scale=scale)
    assert_forward(out, expected)
    out, got_weights = F.attention(*arguments, attn_mask=mask,
                                   is_causal=mask_kind == "causal", scale=scale)
    assert_forward(got_weights, weights)
    assert_forward(F.causal_mask(length, source),
                   np.arange(source)[None, :] <= np.arange(length)[:, None])


def test_attention_row_that_sees_no_key_is_zero():
    """A query whose mask row is all False gets zero weights and a zero output (the
    documented choice, where a NaN would poison every gradient)."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s) for s in [(3, 2), (4, 2), (4, 2)])
    keep = np.array([[True, False, True, True], [False] * 4, [True] * 4])
    out, weights = F.attention(tensor(q), tensor(k), tensor(v), attn_mask=tensor(keep))
    assert_forward(weights[1], np.zeros(4))
    assert_forward(out[1], np.zeros(2))
