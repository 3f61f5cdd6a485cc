"""Every Numba kernel against its reference twin, on inputs at the edges of each dtype.

Kernels are reached through the public dispatchers in "numba" mode, so the same tests
also cover the reshaping, contiguity and 1-D/batched logic of the dispatchers (float16 is
computed in float32). The reference is the twin run in a wider dtype (float64 for float16
and float32, long double for float64), and each result must lie within the tolerance
derived from the op's rounding errors (tests/tolerances.py). Logits are centred at 0,
+-100 or 1e4 with spreads up to 1e4: exp overflows past 88 in float32 and past 11 in
float16, so a kernel that skips the row max fails. (The switches: test_kernel_modes.py.)
"""

import numpy as np
import pytest
from helpers import shapes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tolerances import (
    assert_within,
    cross_entropy_backward_tolerance,
    layer_norm_backward_tolerance,
    layer_norm_tolerance,
    log_softmax_backward_tolerance,
    log_softmax_tolerance,
    output_rounding,
    softmax_backward_tolerance,
    softmax_tolerance,
    weighted_sum_tolerance,
)

import minigrad.kernels as kernels
from minigrad.kernels.cross_entropy import (
    cross_entropy_backward_twin,
    cross_entropy_twin,
    smoothed_targets,
)
from minigrad.kernels.layer_norm import (
    layer_norm_backward_twin,
    layer_norm_twin,
    layer_norm_weight_grad_twin,
)
from minigrad.kernels.softmax import (
    log_softmax_backward_twin,
    log_softmax_twin,
    softmax_backward_twin,
    softmax_twin,
)

DTYPES = [np.float16, np.float32, np.float64]
FAST = settings(max_examples=25, deadline=None)


@pytest.fixture(autouse=True)
def _numba_mode():
    with kernels.mode("numba"):
        yield


def _computed_in(dtype):
    return np.float32 if dtype == np.float16 else dtype


def _wide(a):
    """A floating array in the reference's dtype (others unchanged)."""
    if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
        return a
    return a.astype(np.longdouble if a.dtype == np.float64 else np.float64)


def _reference(twin, *args):
    result = twin(*[_wide(a) for a in args])
    return tuple(result) if isinstance(result, tuple) else result


def _check(actual, expected, tolerance, dtype, what):
    """actual (dtype) within tolerance of the wide expected value, plus the result's
    rounding to float16 where the kernel computed in float32."""
    assert actual.dtype == dtype, f"{what}: dtype {actual.dtype}, expected {dtype}"
    if dtype == np.float16:
        tolerance = tolerance + output_rounding(expected, dtype)
    assert_within(actual, expected, tolerance, what)


def _values(dtype, shape, low, high):
    """dtype arrays of distinct values in [low, high] (before rounding to dtype)."""
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high),
                      unique=True).map(lambda a: a.astype(dtype))


@st.composite
def edge_logits(draw, dtype, shape=None):
    """Logits centred at 0, +-100 or 1e4 with a spread of 3, 30 or 1e4 (within +-1e4):
    all near 100 (float32's exp overflows past 88), rows spanning 2e4 (every exp but one
    underflows), and ordinary ones."""
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=9)) if shape is None else shape
    centre = draw(st.sampled_from([0.0, 100.0, -100.0, 1e4]))
    spread = draw(st.sampled_from([3.0, 30.0, 1e4]))
    return draw(_values(dtype, shape, max(centre - spread, -1e4), min(centre + spread, 1e4)))


@st.composite
def masked_logits(draw, dtype):
    """edge_logits with some -inf entries, sometimes a fully -inf row, sometimes a
    non-contiguous view."""
    x = draw(edge_logits(dtype))
    x[draw(hnp.arrays(np.bool_, x.shape)) & draw(hnp.arrays(np.bool_, x.shape))] = -np.inf
    if draw(st.booleans()):
        x.reshape(-1, x.shape[-1])[0] = -np.inf
    if x.ndim > 1 and draw(st.booleans()):
        x = np.swapaxes(x, -1, -2)
    return x


def _upstream(data, dtype, shape):
    return data.draw(_values(dtype, shape, -10, 10))


# ----------------------------------------------------------------------------- softmax


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_softmax_matches_reference(dtype, data):
    x = data.draw(masked_logits(dtype))
    tolerance = softmax_tolerance(x, _computed_in(dtype))
    _check(kernels.softmax(x), _reference(softmax_twin, x), tolerance, dtype, "softmax")


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_log_softmax_matches_reference(dtype, data):
    x = data.draw(masked_logits(dtype))
    tolerance = log_softmax_tolerance(x, _computed_in(dtype))
    _check(kernels.log_softmax(x), _reference(log_softmax_twin, x), tolerance, dtype,
           "log_softmax")


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_softmax_backward_matches_reference(dtype, data):
    y = softmax_twin(data.draw(masked_logits(dtype)))
    g = _upstream(data, dtype, y.shape)
    tolerance = softmax_backward_tolerance(y, g, _computed_in(dtype))
    _check(kernels.softmax_backward(y, g), _reference(softmax_backward_twin, y, g), tolerance,
           dtype, "softmax_backward")


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_log_softmax_backward_matches_reference(dtype, data):
    z = log_softmax_twin(data.draw(masked_logits(dtype)))
    g = _upstream(data, dtype, z.shape)
    tolerance = log_softmax_backward_tolerance(z, g, _computed_in(dtype))
    _check(kernels.log_softmax_backward(z, g), _reference(log_softmax_backward_twin, z, g),
           tolerance, dtype, "log_softmax_backward")


def test_fully_masked_row_conventions():
    x = np.full((2, 5), -np.inf, np.float32)
    x[1, 2] = 3.0
    np.testing.assert_array_equal(kernels.softmax(x), [[0] * 5, [0, 0, 1, 0, 0]])
    z = kernels.log_softmax(x)
    assert np.all(z[0] == -np.inf) and z[1, 2] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape", [(64, 1), (300, 4), (300, 7), (33, 16), (300, 20), (5, 31), (70, 33), (3, 1000)]
)
def test_softmax_kernels_across_row_lengths_and_chunks(dtype, shape):
    """Rows run in chunks of about 2048 values, each row in vectors of 4 or 8 lanes with a
    masked partial last vector unless the length is a multiple of the lanes: rows of 1,
    shorter than one vector, exact multiples and ragged, several chunks, -inf entries and
    fully masked rows."""
    from minigrad.kernels.cpu import softmax as cpu_softmax

    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 30).astype(dtype)
    x[rng.random(shape) < 0.2] = -np.inf
    x[::7] = -np.inf
    g = rng.standard_normal(shape).astype(dtype)
    y, z = softmax_twin(x), log_softmax_twin(x)
    cases = [
        ("softmax", (x,), softmax_twin, softmax_tolerance(x, dtype)),
        ("log_softmax", (x,), log_softmax_twin, log_softmax_tolerance(x, dtype)),
        ("softmax_backward", (y, g), softmax_backward_twin,
         softmax_backward_tolerance(y, g, dtype)),
        ("log_softmax_backward", (z, g), log_softmax_backward_twin,
         log_softmax_backward_tolerance(z, g, dtype)),
    ]
    for name, args, twin, tolerance in cases:
        out = np.empty_like(x)
        getattr(cpu_softmax, name)(*args, out)
        _check(out, _reference(twin, *args), tolerance, dtype, name)


# ----------------------------------------------------------------------------- layer norm


@st.composite
def layer_norm_inputs(draw, dtype):
    """x of 1-3 dims (sometimes a non-contiguous view), spread around a drawn offset (up to
    100: the mean must be subtracted accurately), the number of normalised trailing dims
    (rows of 2 or more values where the shape has them: a row of one has dx = 0), and
    weight/bias of that shape or None."""
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=9))
    offset = draw(st.sampled_from([0.0, 5.0, -100.0]))
    x = draw(_values(dtype, shape, offset - 10, offset + 10))
    if x.ndim > 1 and draw(st.booleans()):
        x = np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    long_rows = [k for k in range(1, x.ndim + 1) if np.prod(shape[x.ndim - k:]) >= 2]
    num_dims = draw(st.sampled_from(long_rows or [x.ndim]))
    normalized = x.shape[x.ndim - num_dims:]
    affine = draw(st.sampled_from(["none", "weight", "both"]))
    weight = draw(_values(dtype, normalized, -2, 2)) if affine != "none" else None
    bias = draw(_values(dtype, normalized, -10, 10)) if affine == "both" else None
    return x, weight, bias, num_dims


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@FAST
@given(data=st.data(), eps=st.sampled_from([1e-5, 0.1]))
def test_layer_norm_matches_reference(dtype, data, eps):
    x, weight, bias, num_dims = data.draw(layer_norm_inputs(dtype))
    expected = _reference(lambda *a: layer_norm_twin(*a, num_dims, eps), x, weight, bias)
    actual = kernels.layer_norm(x, weight, bias, num_dims, eps)
    tolerances = layer_norm_tolerance(x, weight, bias, num_dims, eps, dtype)
    for name, a, e, tolerance in zip(("y", "mean", "rstd"), actual, expected, tolerances):
        _check(a, e, tolerance, dtype, f"layer_norm {name}")


def _layer_norm_backward_inputs(dtype, data) -> tuple:
    """x, weight, num_dims, the forward's mean and rstd, and an upstream gradient g."""
    x, weight, _, num_dims = data.draw(layer_norm_inputs(dtype))
    _, mean, rstd = layer_norm_twin(x, weight, None, num_dims, 1e-5)
    g = data.draw(_values(dtype, x.shape, -2, 2))
    return x, weight, num_dims, mean, rstd, g


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@FAST
@given(data=st.data())
def test_layer_norm_backward_matches_reference(dtype, data):
    x, weight, num_dims, mean, rstd, g = _layer_norm_backward_inputs(dtype, data)
    expected = _reference(lambda *a: layer_norm_backward_twin(*a, num_dims), g, x, mean, rstd,
                          weight)
    actual = kernels.layer_norm_backward(g, x, mean, rstd, weight, num_dims)
    tolerances = layer_norm_backward_tolerance(g, x, mean, rstd, weight, num_dims, dtype)
    for name, a, e, tolerance in zip(("dx", "dweight", "dbias"), actual, expected, tolerances):
        if e is None:
            assert a is None
            continue
        _check(a, e, tolerance, dtype, f"layer_norm_backward {name}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@FAST
@given(data=st.data())
def test_layer_norm_weight_grad_matches_reference(dtype, data):
    x, _, num_dims, mean, rstd, g = _layer_norm_backward_inputs(dtype, data)
    expected = _reference(lambda *a: layer_norm_weight_grad_twin(*a, num_dims), g, x, mean,
                          rstd)
    actual = kernels.layer_norm_weight_grad(g, x, mean, rstd, num_dims)
    _, tolerance, _ = layer_norm_backward_tolerance(g, x, mean, rstd, None, num_dims, dtype)
    _check(actual, expected, tolerance, dtype, "layer_norm_weight_grad")


# ----------------------------------------------------------------------------- cross-entropy


@st.composite
def cross_entropy_inputs(draw, dtype, rows=None, classes=None):
    """Logits (M, C) from edge_logits with 1-row and 1-class cases, some -inf entries and
    sometimes a non-contiguous view; targets with ignored rows (sometimes all); class
    weights or None; label smoothing 0, 0.1 or any in [1e-3, 1]."""
    rows = draw(st.integers(1, 9)) if rows is None else rows
    classes = draw(st.integers(1, 9)) if classes is None else classes
    x = draw(edge_logits(dtype, (rows, classes)))
    x[draw(hnp.arrays(np.bool_, x.shape)) & draw(hnp.arrays(np.bool_, x.shape))] = -np.inf
    if draw(st.booleans()):
        x = np.ascontiguousarray(x.T).T
    target = draw(hnp.arrays(np.int64, rows, elements=st.integers(0, classes - 1)))
    valid = draw(hnp.arrays(np.bool_, rows)) | draw(st.booleans())
    if draw(st.booleans()):
        valid[:] = False
    class_weight = draw(_values(dtype, classes, 0, 3)) if draw(st.booleans()) else None
    target_weight = valid.astype(dtype)
    if class_weight is not None:
        target_weight *= class_weight[target]
    # not below 1e-3: eps / C must not underflow in float32 (the kernel then skips the
    # smoothing term that the twin still multiplies, giving 0 * inf = NaN on -inf logits)
    smoothing = draw(st.one_of(st.just(0.0), st.just(0.1), st.floats(1e-3, 1)))
    return x, valid, target, target_weight, class_weight, smoothing


def _targets(arguments):
    """The dense target distributions q (float64) of cross_entropy_inputs' rows."""
    x, *rows = arguments
    return smoothed_targets(*[_wide(a) for a in (x, *rows)])


def _check_cross_entropy(arguments, dtype):
    x = arguments[0]
    losses, logp = kernels.cross_entropy(*arguments)
    expected_losses, expected_logp = _reference(cross_entropy_twin, *arguments)
    logp_tolerance = log_softmax_tolerance(x, _computed_in(dtype))
    _check(logp, expected_logp, logp_tolerance, dtype, "cross_entropy logp")
    # loss_i = -sum_c q_c logp_c, each logp_c within its tolerance
    loss_tolerance = weighted_sum_tolerance(_targets(arguments), expected_logp, logp_tolerance,
                                            _computed_in(dtype))
    _check(losses, expected_losses, loss_tolerance, dtype, "cross_entropy losses")


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data())
def test_cross_entropy_matches_reference(dtype, data):
    with np.errstate(invalid="ignore"):  # 0 weight times a -inf logit: NaN on both sides
        _check_cross_entropy(data.draw(cross_entropy_inputs(dtype)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@FAST
@given(data=st.data(), per_row=st.booleans())
def test_cross_entropy_backward_matches_reference(dtype, data, per_row):
    arguments = data.draw(cross_entropy_inputs(dtype))
    logp = log_softmax_twin(arguments[0])
    rows = arguments[1:]
    scale_shape = (logp.shape[0], 1) if per_row else ()
    scale = data.draw(_values(dtype, scale_shape, -2, 2))
    expected = _reference(cross_entropy_backward_twin, logp, *rows, scale)
    tolerance = cross_entropy_backward_tolerance(logp, _targets((logp, *rows)), scale,
                                                 _computed_in(dtype))
    _check(kernels.cross_entropy_backward(logp, *rows, scale), expected, tolerance, dtype,
           "cross_entropy_backward")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_of_a_batch_of_logits_near_100(dtype):
    """24 rows of 1024 logits in 100 +- 3 (24,576 values, above the kernels' size
    thresholds): without the row max, exp overflows float32 and the loss is inf."""
    rng = np.random.default_rng(0)
    x = (100 + rng.uniform(-3, 3, (24, 1024))).astype(dtype)
    target = rng.integers(0, 1024, 24)
    valid = np.ones(24, bool)
    arguments = (x, valid, target, valid.astype(dtype), None, 0.1)
    _check_cross_entropy(arguments, dtype)
    logp = log_softmax_twin(x)
    scale = np.asarray(1 / 24, dtype)
    tolerance = cross_entropy_backward_tolerance(logp, _targets((logp, *arguments[1:])), scale,
                                                 _computed_in(dtype))
    _check(kernels.cross_entropy_backward(logp, *arguments[1:], scale),
           _reference(cross_entropy_backward_twin, logp, *arguments[1:], scale), tolerance,
           dtype, "cross_entropy_backward")


def test_cross_entropy_all_ignored_gives_zero_loss_and_gradient():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    valid = np.zeros(3, bool)
    rows = (valid, np.zeros(3, np.int64), valid.astype(np.float32), None, 0.1)
    losses, logp = kernels.cross_entropy(x, *rows)
    np.testing.assert_array_equal(losses, 0)
    np.testing.assert_array_equal(kernels.cross_entropy_backward(logp, *rows, np.float32(1)), 0)


# ----------------------------------------------------------------------------- adam


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@FAST
@given(data=st.data(), amsgrad=st.booleans(), decoupled=st.booleans(),
       weight_decay=st.sampled_from([0.0, 0.1]), step=st.integers(1, 50))
def test_adam_update_matches_reference(dtype, data, amsgrad, decoupled, weight_decay, step):
    """Elementwise, about 12 roundings of values up to 3 per element: within 2e-5 (float32)
    or 1e-12 (float64), relative and absolute."""
    from minigrad.kernels.adam import adam_update_twin

    tolerance = {np.float32: 2e-5, np.float64: 1e-12}[dtype]
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=9))
    p, g, m = (data.draw(_values(dtype, shape, -3, 3)) for _ in range(3))
    v, v_max = (np.abs(data.draw(_values(dtype, shape, -3, 3))) for _ in range(2))
    ours = [a.copy() for a in (p, m, v, v_max)]
    twin = [a.copy() for a in (p, m, v, v_max)]
    settings_ = (step, 1e-2, 0.9, 0.98, 1e-8, weight_decay, decoupled)
    kernels.adam_update(ours[0], g, ours[1], ours[2], ours[3] if amsgrad else None, *settings_)
    adam_update_twin(twin[0], g, twin[1], twin[2], twin[3] if amsgrad else None, *settings_)
    for a, b in zip(ours, twin):
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_update_many_gives_each_parameter_its_own_update(amsgrad, decoupled):
    """A group at once (one kernel call per dtype; a strided parameter and a float16
    one go one by one) gives the bits of adam_update on each parameter alone, each at
    its own step."""
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (7,), (2, 3, 5), (1,), (6, 6), (4, 2)]
    dtypes = [np.float32, np.float32, np.float64, np.float32, np.float16, np.float64]
    groups = []
    for shape, dtype in zip(shapes, dtypes, strict=True):
        p, g, m = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
        v, v_max = (np.abs(rng.standard_normal(shape)).astype(dtype) for _ in range(2))
        groups.append([p, g, m, v, v_max])
    groups[0][0] = np.asfortranarray(groups[0][0])  # not C-contiguous: updated alone
    steps = [1, 5, 2, 40, 3, 7]
    settings_ = (1e-2, 0.9, 0.98, 1e-8, 0.1, decoupled)
    alone = [[a.copy(order="K") for a in arrays] for arrays in groups]
    for (p, g, m, v, v_max), step in zip(alone, steps, strict=True):
        kernels.adam_update(p, g, m, v, v_max if amsgrad else None, step, *settings_)
    together = [[a.copy(order="K") for a in arrays] for arrays in groups]
    p, g, m, v, v_max = (list(arrays) for arrays in zip(*together, strict=True))
    kernels.adam_update_many(p, g, m, v, v_max if amsgrad else None, steps, *settings_)
    for got, want in zip(together, alone, strict=True):
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)
