"""Where host and device meet: writes and updates across devices, loss and embedding
arguments on the other device, out-of-range indices, dtypes the GPU libraries change,
sums into repeated indices that repeat bit for bit, the GPU random state, the profiler's
waiting for the GPU and the Numba kernel launch.
On the CuPy stand-in (MINIGRAD_FAKE_GPU=1) each of these fails the way it would on a
real GPU when the code is wrong.
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest
from helpers import requires_cuda

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

# ----------------------------------------------------------------------------- across devices


@requires_cuda
@pytest.mark.parametrize("write", [
    lambda dst, src: dst.copy_(src),
    lambda dst, src: dst.__setitem__(slice(0, 2), src[1:]),
    lambda dst, src: dst.__setitem__(mg.tensor([2, 0], device=dst.device), src[1:]),
    lambda dst, src: dst.__setitem__(mg.tensor([True, False, True]), src[1:]),
    lambda dst, src: dst.__setitem__(slice(0, 2), src[1:].numpy()),
    lambda dst, src: dst.fill_(src[2]),
], ids=["copy_", "slice", "index_array", "mask_on_cpu", "numpy_value", "fill_0d"])
def test_writes_copy_values_across_devices(write):
    """As in PyTorch, a write (copy_, x[i] = v) copies a value from the other device."""
    for destination, source in (("cpu", "gpu"), ("gpu", "cpu")):
        expected = mg.zeros(3)
        write(expected, mg.tensor([1.0, 2.0, 3.0]))
        dst, src = mg.zeros(3, device=destination), mg.tensor([1.0, 2.0, 3.0], device=source)
        write(dst, src)
        assert dst.device == destination
        np.testing.assert_array_equal(dst.numpy(), expected.numpy())


@requires_cuda
def test_a_list_is_written_into_a_gpu_tensor():
    x = mg.zeros(2, 3, device="gpu")
    x[0] = [1.0, 2.0, 3.0]
    x[1, 1:] = [[5.0, 6.0]]
    np.testing.assert_array_equal(x.numpy(), [[1, 2, 3], [0, 5, 6]])


@requires_cuda
@pytest.mark.parametrize("update", [
    lambda dst, other: dst.add_(other),
    lambda dst, other: dst.sub_(other),
    lambda dst, other: dst.mul_(other),
    lambda dst, other: dst.div_(other),
    lambda dst, other: dst.masked_fill_(other > 1, 0.0),
], ids=["add_", "sub_", "mul_", "div_", "masked_fill_"])
def test_in_place_updates_across_devices_raise_naming_both(update):
    for destination, source in (("cpu", "cuda:0"), ("cuda:0", "cpu")):
        dst, other = mg.ones(3, device=destination), mg.full((3,), 2.0, device=source)
        with pytest.raises(RuntimeError, match="same device") as info:
            update(dst, other)
        message = str(info.value)
        assert f"on {destination}" in message and f"on {source}" in message, message
        np.testing.assert_array_equal(dst.numpy(), [1.0, 1.0, 1.0])  # left unchanged


@requires_cuda
@pytest.mark.parametrize("loss", [
    lambda x, t, w: F.cross_entropy(x, t, weight=w),
    lambda x, t, w: F.nll_loss(x.log_softmax(-1), t, weight=w),
], ids=["cross_entropy", "nll_loss"])
def test_loss_arguments_on_another_device_raise_naming_both(loss):
    for on_input, on_other in (("cpu", "cuda:0"), ("cuda:0", "cpu")):
        x = mg.randn(4, 3, device=on_input)
        same_t, same_w = mg.tensor([0, 2, 1, 0], device=on_input), mg.ones(3, device=on_input)
        other_t, other_w = same_t.to(on_other), same_w.to(on_other)
        for target, weight, name in ((other_t, same_w, "target"), (same_t, other_w, "weight")):
            with pytest.raises(RuntimeError, match="same device") as info:
                loss(x, target, weight)
            message = str(info.value)
            assert f"input on {on_input}" in message and f"{name} on {on_other}" in message


@requires_cuda
def test_embedding_ids_on_another_device_raise_naming_both():
    weight = mg.randn(5, 2, device="gpu")
    with pytest.raises(RuntimeError, match="same device") as info:
        F.embedding(mg.tensor([1, 3]), weight)
    assert "input on cuda:0" in str(info.value) and "ids on cpu" in str(info.value)


# ----------------------------------------------------------------------------- GPU library quirks


@requires_cuda
@pytest.mark.parametrize("index", [[0, 3], [-4, 1], [[1], [7]]])
def test_out_of_range_index_arrays_raise_on_the_gpu(index):
    """CuPy wraps such indices around; NumPy and PyTorch raise."""
    x = mg.arange(6.0, device="gpu").reshape(2, 3)
    with pytest.raises(IndexError, match="out of bounds"):
        x[mg.tensor(index, device="gpu")]
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 3"):
        x[:, mg.tensor([0, 3], device="gpu")]
    with pytest.raises(IndexError, match="out of bounds"), mg.no_grad():
        x[mg.tensor(index, device="gpu")] = 1.0
    for scalar_index in (np.int64(2), mg.tensor(2, device="gpu")):
        with pytest.raises(IndexError, match="out of bounds"):
            x[scalar_index]
    np.testing.assert_array_equal(x[mg.tensor([-1, 1], device="gpu")].numpy(),
                                  [[3, 4, 5], [3, 4, 5]])


@requires_cuda
@pytest.mark.parametrize("op", [mg.erf, lambda t: t.gelu(), lambda t: F.gelu(t, "tanh")],
                         ids=["erf", "gelu", "gelu_tanh"])
def test_float16_stays_float16_on_the_gpu(op):
    """cupyx's erf maps float16 to float64; the op must give its input's dtype."""
    values = np.linspace(-3, 3, 13).astype(np.float16)
    on_gpu = mg.tensor(values, device="gpu", requires_grad=True)
    out = op(on_gpu)
    assert out.dtype is mg.float16 and out.device == "gpu"
    expected = op(mg.tensor(values)).numpy()
    np.testing.assert_allclose(out.numpy(), expected, atol=2e-3)
    out.sum().backward()
    assert on_gpu.grad.dtype is mg.float16


# ----------------------------------------------------------------------------- repeated indices


def _order_sensitive(shape: tuple) -> np.ndarray:
    """float32 gradients whose sums change with the order of addition: magnitudes from
    1e-3 to 1e8 (2**24 + 1 already rounds back to 2**24)."""
    rng = np.random.default_rng(3)
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 9, shape)).astype(np.float32)


def _ids(count: int, high: int) -> np.ndarray:
    """Ids of which the first few repeat often, as words do."""
    return np.minimum(np.random.default_rng(4).geometric(0.3, count) - 1, high - 1)


SUMS_INTO_REPEATED_INDICES = {
    "embedding": (lambda w, ids: F.embedding(ids.reshape(16, 12), w), (6, 5), 192),
    "getitem": (lambda w, ids: w[ids], (6, 5), 192),
    "getitem_pairs": (lambda w, ids: w[ids, ids.flip(0)], (6, 5), 192),
    "gather": (lambda w, ids: w.gather(0, ids.reshape(-1, 1).expand(-1, 5)), (6, 5), 192),
    "index_select": (lambda w, ids: w.index_select(1, ids), (3, 6), 192),
    "scatter_add": (lambda w, ids: mg.zeros(6, device=w.device).scatter_add(
        0, ids, w.reshape(-1)[:192]), (48, 4), 192),
}


@requires_cuda
@pytest.mark.parametrize("case", SUMS_INTO_REPEATED_INDICES)
def test_gpu_sums_into_repeated_indices_repeat_bit_for_bit(case):
    """Outputs and gradients that add up repeated positions (backward of a read at
    integer positions, scatter_add's forward) come out with the same bits on every run
    (CuPy's add.at would add in the order its atomics land; the stand-in shuffles it),
    and agree with the CPU's within the rounding of a sum of that many terms."""
    fn, shape, count = SUMS_INTO_REPEATED_INDICES[case]
    ids = _ids(count, min(shape))
    weight = _order_sensitive(shape)
    upstream = _order_sensitive(tuple(fn(mg.tensor(weight), mg.tensor(ids)).shape))
    results = []
    for device in ("gpu", "gpu", "gpu", "cpu"):
        w = mg.tensor(weight, device=device, requires_grad=True)
        out = fn(w, mg.tensor(ids, device=device))
        out.backward(mg.tensor(upstream, device=device))
        results.append(np.concatenate([out.detach().numpy().ravel(), w.grad.numpy().ravel()]))
    assert results[0].tobytes() == results[1].tobytes() == results[2].tobytes()
    rounding = (np.abs(upstream).sum() + np.abs(weight).sum()) * count * np.finfo(np.float32).eps
    np.testing.assert_allclose(results[0], results[3], rtol=0, atol=rounding)


@pytest.fixture
def deterministic_algorithms():
    mg.use_deterministic_algorithms(True)
    yield
    mg.use_deterministic_algorithms(False)


@requires_cuda
@pytest.mark.usefixtures("deterministic_algorithms")
def test_deterministic_mode_refuses_a_gpu_scatter_with_repeated_positions():
    """Which of two values written to one position lands is up to CUDA: refused, or
    warned about under warn_only; without repeats, or with a number, it runs."""
    x, src = mg.zeros(4, device="gpu"), mg.tensor([1.0, 2.0, 3.0], device="gpu")
    repeated, distinct = mg.tensor([1, 3, 1], device="gpu"), mg.tensor([1, 3, 0], device="gpu")
    with pytest.raises(RuntimeError, match="scatter .*GPU.* repeats a position.*"
                                           "use_deterministic_algorithms"):
        x.scatter(0, repeated, src)
    with pytest.raises(RuntimeError, match="deterministic"):
        x.scatter_(0, repeated, src)
    assert x.scatter(0, distinct, src).tolist() == [3.0, 1.0, 0.0, 2.0]
    assert x.scatter(0, repeated, value=5.0).tolist() == [0.0, 5.0, 0.0, 5.0]
    mg.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match="scatter .*does not have a deterministic"):
        assert x.scatter(0, repeated, src)[3].item() == 2.0


# ----------------------------------------------------------------------------- random state


def _draws(device: str) -> list:
    """Every kind of draw minigrad makes, dropout included."""
    x = mg.ones(4, 5, device=device)
    return [mg.rand(3, device=device).numpy(), mg.randn(2, 3, device=device).numpy(),
            mg.randint(0, 100, (4,), device=device).numpy(),
            mg.rand(2, dtype=mg.float16, device=device).numpy(),
            F.dropout(x, 0.5).numpy(), nn.init.normal_(mg.zeros(3, device=device)).numpy()]


@requires_cuda
def test_rng_state_restores_the_gpu_draws_exactly(tmp_path):
    mg.manual_seed(5)
    _draws("gpu")
    state = mg.get_rng_state()
    expected = _draws("gpu") + _draws("cpu")
    mg.save({"rng": state}, tmp_path / "rng.safetensors")
    mg.manual_seed(99)
    _draws("gpu")
    mg.set_rng_state(mg.load(tmp_path / "rng.safetensors")["rng"])
    for got, want in zip(_draws("gpu") + _draws("cpu"), expected, strict=True):
        np.testing.assert_array_equal(got, want)


@requires_cuda
def test_gpu_draws_are_seeded_and_independent():
    mg.manual_seed(1)
    first = [mg.rand(1000, device="gpu").numpy() for _ in range(2)]
    mg.manual_seed(2)
    other_seed = mg.rand(1000, device="gpu").numpy()
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[0], other_seed)
    assert abs(np.corrcoef(first[0], first[1])[0, 1]) < 0.1
    assert 0.45 < first[0].mean() < 0.55


# ----------------------------------------------------------------------------- waiting for the GPU


@requires_cuda
def test_the_profiler_waits_for_the_gpu_around_every_op(monkeypatch):
    waits = []
    synchronize = mg.cuda.synchronize
    monkeypatch.setattr(mg.backend.cuda, "synchronize", lambda: waits.append(1) or synchronize())
    x = mg.randn(8, 8, device="gpu", requires_grad=True)
    with mg.profiler.profile() as prof:
        (x.exp() * 2.0).sum().backward()
    forward_ops = sum(prof.forward_calls.values())
    backward_ops = sum(prof.backward_calls.values())
    assert forward_ops >= 3 and backward_ops >= 3
    assert len(waits) >= 2 * (forward_ops + backward_ops)
    waits.clear()
    with mg.profiler.profile():
        (mg.randn(8, 8, requires_grad=True).exp() * 2.0).sum().backward()
    assert waits == []  # CPU ops never wait for the GPU


# ----------------------------------------------------------------------------- Numba CUDA launch


def test_gemm_grid_stays_within_cudas_limits(monkeypatch):
    """Grid y and z allow 65535 blocks: a million-row product must not ask for more."""
    pytest.importorskip("numba.cuda")
    from minigrad.kernels.cuda import gemm

    grids = []
    monkeypatch.setattr(gemm, "launch", lambda kernel, grid, block, *arrays: grids.append(grid))
    rows, batch = 1_200_000, 70_000
    gemm._gemm(np, np.zeros((1, rows, 1), np.float32), np.zeros((1, 1, 1), np.float32))
    gemm._gemm(np, np.zeros((batch, 1, 1), np.float32), np.zeros((batch, 1, 1), np.float32))
    for x, y, z in grids:
        assert x <= 2**31 - 1 and y <= 65535 and z <= 65535, (x, y, z)
    assert grids[0][1] == 65535 and grids[1][2] == 65535


@requires_cuda
def test_gpu_kernels_launch_on_cupys_current_stream(monkeypatch):
    """The kernels run on CuPy's current stream, handed to Numba as an external stream,
    and see the CuPy arrays without a copy or a device synchronisation."""
    pytest.importorskip("numba.cuda")
    from numba import cuda

    from minigrad.kernels import cuda as gpu_kernels
    twins = importlib.import_module("minigrad.kernels.softmax")  # the module of the twins

    cp = mg.backend.cupy_or_none()
    streams, syncs = [], []
    external_stream, as_cuda_array = cuda.external_stream, cuda.as_cuda_array
    monkeypatch.setattr(cuda, "external_stream",
                        lambda pointer: streams.append(pointer) or external_stream(pointer))
    monkeypatch.setattr(cuda, "as_cuda_array",
                        lambda a, sync=True: syncs.append(sync) or as_cuda_array(a, sync=sync))
    x = cp.asarray(np.random.default_rng(0).standard_normal((3, 40)).astype(np.float32))
    with cp.cuda.Stream(non_blocking=True) as stream:
        y = gpu_kernels.softmax(x)
    assert streams == [stream.ptr] and syncs and not any(syncs)
    cp.testing.assert_allclose(y, twins.softmax_twin(x), rtol=1e-5, atol=1e-6)
