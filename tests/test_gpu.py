"""The GPU backend: devices, moving tensors, modules, optimizers and checkpoints on the GPU,
every op family on the GPU against the CPU, and the numba.cuda kernels on CuPy arrays.

Without CUDA the GPU tests skip with the reason (CuPy missing, no driver, no device),
unless MINIGRAD_FAKE_GPU=1 runs them on the CuPy stand-in (with NUMBA_ENABLE_CUDASIM=1
for the numba.cuda kernels); the tests of what a machine without CUDA must do run
everywhere, the stand-in switched off for them.
"""
from __future__ import annotations

import importlib
import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import kernels, nn, optim

requires_cuda = pytest.mark.skipif(
    not mg.cuda.is_available(), reason=f"needs CUDA: {mg.cuda.unavailable_reason()}"
)

# ----------------------------------------------------------------------------- everywhere


def test_importing_minigrad_imports_neither_cupy_nor_numba():
    code = "import sys, minigrad; print('cupy' in sys.modules, 'numba' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.split() == ["False", "False"]


def test_device_names_and_aliases():
    assert mg.Device("cuda") == "gpu" == mg.Device("cuda:0")
    assert str(mg.Device("gpu")) == "cuda" and str(mg.Device("gpu:0")) == "cuda:0"
    assert mg.tensor([1.0]).device == "cpu"
    with pytest.raises(RuntimeError, match="unknown device 'tpu'"):
        mg.zeros(2, device="tpu")


@pytest.mark.usefixtures("without_cuda")
@pytest.mark.parametrize("device", ["gpu", "cuda", "cuda:0"])
def test_asking_for_the_gpu_without_cuda_raises_one_clear_line(device):
    with pytest.raises(RuntimeError, match="CUDA is not available") as info:
        mg.zeros(2, device=device)
    assert "\n" not in str(info.value)
    assert mg.cuda.unavailable_reason() in str(info.value)
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        mg.tensor([1.0]).to(device)


@pytest.mark.usefixtures("without_cuda")
def test_cuda_namespace_without_cuda():
    assert mg.cuda.is_available() is False
    assert mg.cuda.device_count() == 0
    assert mg.cuda.unavailable_reason()
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        mg.cuda.synchronize()


# ----------------------------------------------------------------------------- devices

def _gpu_array_type():
    return type(mg.backend.cupy_or_none().zeros(1))


@requires_cuda
def test_cuda_namespace():
    assert mg.cuda.device_count() >= 1
    assert isinstance(mg.cuda.get_device_name(), str)
    assert mg.cuda.unavailable_reason() == ""
    mg.cuda.synchronize()


@requires_cuda
@pytest.mark.parametrize("make", [
    lambda d: mg.tensor([[1.0, 2.0], [3.0, 4.0]], device=d),
    lambda d: mg.zeros(2, 3, device=d),
    lambda d: mg.ones(2, 3, dtype=mg.float64, device=d),
    lambda d: mg.full((2, 2), 7, device=d),
    lambda d: mg.arange(5, device=d),
    lambda d: mg.eye(3, device=d),
    lambda d: mg.zeros_like(mg.ones(2, 2), device=d),
])
def test_creation_on_the_gpu_matches_the_cpu(make):
    on_gpu, on_cpu = make("cuda"), make("cpu")
    assert on_gpu.device == "gpu" and isinstance(on_gpu.array, _gpu_array_type())
    assert on_gpu.dtype is on_cpu.dtype
    np.testing.assert_array_equal(on_gpu.numpy(), on_cpu.numpy())


@requires_cuda
def test_random_creation_on_the_gpu_is_seeded_by_manual_seed():
    draws = []
    for _ in range(2):
        mg.manual_seed(123)
        draws.append([mg.rand(3, 4, device="gpu").numpy(), mg.randn(5, device="gpu").numpy(),
                      mg.randint(0, 10, (6,), device="gpu").numpy()])
    for first, second in zip(*draws):
        np.testing.assert_array_equal(first, second)
    uniform, normal, integers = draws[0]
    assert uniform.dtype == np.float32 and ((uniform >= 0) & (uniform < 1)).all()
    assert normal.dtype == np.float32
    assert integers.dtype == np.int64 and ((integers >= 0) & (integers < 10)).all()


@requires_cuda
def test_moving_tensors_between_devices():
    x = mg.tensor([[1.5, -2.0], [0.25, 4.0]])
    on_gpu = x.to("cuda")
    assert on_gpu.device == "gpu" and x.device == "cpu"
    assert x.gpu().device == x.cuda().device == x.to("cuda:0").device == "gpu"
    back = on_gpu.cpu()
    assert back.device == "cpu" and isinstance(back.array, np.ndarray)
    assert isinstance(on_gpu.numpy(), np.ndarray)
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert on_gpu.to("gpu") is on_gpu
    assert on_gpu.to("cpu", mg.float64).dtype is mg.float64
    assert on_gpu[1, 1].item() == 4.0 and on_gpu.tolist() == x.tolist()
    assert "device='cuda:0'" in repr(on_gpu)  # as PyTorch prints it


@requires_cuda
def test_gradient_flows_back_across_devices():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x.gpu() * mg.tensor([4.0, 5.0, 6.0], device="gpu")).cpu().sum()
    y.backward()
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 5.0, 6.0])


@requires_cuda
@pytest.mark.parametrize("op", [
    lambda a, b: a + b,
    lambda a, b: a * b,
    lambda a, b: a @ b,
    lambda a, b: mg.cat([a, b]),
    lambda a, b: mg.where(a > 0, a, b),
    lambda a, b: mg.maximum(a, b),
    lambda a, b: a == b,
])
def test_mixing_devices_raises_an_error_naming_both(op):
    on_cpu = mg.ones(2, 2, requires_grad=True)
    on_gpu = mg.ones(2, 2, device="gpu")
    for a, b in ((on_cpu, on_gpu), (on_gpu, on_cpu)):
        with pytest.raises(RuntimeError) as info:
            op(a, b)
        message = str(info.value)
        assert "cpu" in message and "cuda:0" in message, message


# ----------------------------------------------------------------------------- op families

RNG = np.random.default_rng(7)


def _normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _positive(*shape):
    return RNG.uniform(0.5, 2.0, shape).astype(np.float32)


# (name, function of tensors, input arrays); float inputs require grad
OP_CASES = [
    ("add", lambda a, b: a + b, [_normal(3, 4), _normal(4)]),
    ("sub_scalar", lambda a: 2.0 - a, [_normal(3, 4)]),
    ("mul", lambda a, b: a * b, [_normal(3, 1), _normal(1, 4)]),
    ("div", lambda a, b: a / b, [_normal(3, 4), _positive(3, 4)]),
    ("pow", lambda a, b: a**b, [_positive(3, 4), _normal(3, 4)]),
    ("pow_scalar", lambda a: a**3, [_normal(3, 4)]),
    ("neg", lambda a: -a, [_normal(5)]),
    ("exp", lambda a: a.exp(), [_normal(3, 4)]),
    ("log", lambda a: a.log(), [_positive(3, 4)]),
    ("sqrt", lambda a: a.sqrt(), [_positive(3, 4)]),
    ("rsqrt", lambda a: a.rsqrt(), [_positive(3, 4)]),
    ("abs", lambda a: a.abs(), [_positive(3, 4) * np.sign(_normal(3, 4))]),
    ("tanh", lambda a: a.tanh(), [_normal(3, 4)]),
    ("sigmoid", lambda a: a.sigmoid(), [_normal(3, 4) * 10]),
    ("relu", lambda a: a.relu(), [_positive(3, 4) * np.sign(_normal(3, 4))]),
    ("gelu", lambda a: a.gelu(), [_normal(3, 4)]),
    ("gelu_tanh", lambda a: a.gelu("tanh"), [_normal(3, 4)]),
    ("erf", lambda a: mg.erf(a), [_normal(3, 4)]),
    ("clamp", lambda a: a.clamp(-0.5, 0.5), [_normal(3, 4)]),
    ("sum", lambda a: a.sum(1, keepdim=True), [_normal(3, 4)]),
    ("mean", lambda a: a.mean((0, 2)), [_normal(2, 3, 4)]),
    ("max_dim", lambda a: a.max(1).values, [_normal(3, 4)]),
    ("min_all", lambda a: a.min(), [_normal(3, 4)]),
    ("argmax", lambda a: a.argmax(-1), [_normal(3, 4)]),
    ("var", lambda a: a.var(0), [_normal(5, 3)]),
    ("std", lambda a: a.std(), [_normal(5, 3)]),
    ("logsumexp", lambda a: a.logsumexp(-1), [_normal(3, 4)]),
    ("reshape_permute", lambda a: a.reshape(4, 6).permute(1, 0) * 1.0, [_normal(2, 3, 4)]),
    ("transpose_contiguous", lambda a: a.transpose(0, 2).contiguous(), [_normal(2, 3, 4)]),
    ("expand", lambda a: a.expand(3, 4, 5), [_normal(4, 1)]),
    ("squeeze_flatten", lambda a: a.unsqueeze(0).squeeze(0).flatten(), [_normal(2, 3)]),
    ("cat", lambda a, b: mg.cat([a, b], dim=1), [_normal(2, 3), _normal(2, 2)]),
    ("stack", lambda a, b: mg.stack([a, b], dim=-1), [_normal(2, 3), _normal(2, 3)]),
    ("split", lambda a: a.split(2, dim=1)[1] * 2, [_normal(2, 5)]),
    ("chunk", lambda a: a.chunk(2)[0], [_normal(4, 3)]),
    ("slice", lambda a: a[1:, ::2], [_normal(3, 5)]),
    ("gather_repeats", lambda a: a[mg.tensor([0, 2, 0, 0], device=a.device)], [_normal(3, 4)]),
    ("bool_mask", lambda a: a[a > 0], [_normal(3, 4)]),
    ("where", lambda a, b: mg.where(a > b, a, b), [_normal(3, 4), _normal(3, 4)]),
    ("masked_fill", lambda a: a.masked_fill(a < 0, -1.0), [_normal(3, 4)]),
    ("maximum", lambda a, b: mg.maximum(a, b), [_normal(3, 4), _normal(3, 4)]),
    ("minimum", lambda a, b: mg.minimum(a, b), [_normal(3, 4), _normal(3, 4)]),
    ("triu_tril", lambda a: mg.triu(a, 1) + mg.tril(a, -1), [_normal(4, 4)]),
    ("softmax", lambda a: a.softmax(-1), [_normal(3, 5)]),
    ("softmax_dim0", lambda a: a.softmax(0), [_normal(3, 5)]),
    ("log_softmax", lambda a: a.log_softmax(-1), [_normal(3, 5)]),
    ("matmul", lambda a, b: a @ b, [_normal(3, 4), _normal(4, 5)]),
    ("matmul_batched", lambda a, b: a @ b, [_normal(2, 1, 3, 4), _normal(3, 4, 2)]),
    ("matmul_vector", lambda a, b: a @ b, [_normal(4), _normal(4, 3)]),
    ("to_float64", lambda a: a.to(mg.float64) * 2, [_normal(3)]),
    ("compare_long", lambda a: (a > 0).long() + a.long(), [_normal(3, 4) * 3]),
    ("linear", lambda x, w, b: F.linear(x, w, b), [_normal(2, 3), _normal(4, 3), _normal(4)]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), [_normal(3, 4), _normal(4),
                                                                 _normal(4)]),
    ("embedding", lambda w: F.embedding(mg.tensor([[0, 2], [2, 1]], device=w.device), w),
     [_normal(3, 4)]),
    ("cross_entropy", lambda x: F.cross_entropy(
        x, mg.tensor([1, 0, -100, 3], device=x.device), label_smoothing=0.1), [_normal(4, 5)]),
    ("mse_loss", lambda a, b: F.mse_loss(a, b), [_normal(3, 4), _normal(3, 4)]),
    ("attention", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [_normal(2, 3, 4), _normal(2, 3, 4), _normal(2, 3, 4)]),
    ("dropout_eval", lambda a: F.dropout(a, 0.5, training=False), [_normal(3, 4)]),
]


def _run_case(function, arrays, device):
    inputs = [mg.tensor(a, device=device, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = function(*inputs)
    weights = None
    if out.requires_grad:
        # weighted, not a plain sum: the sum of softmax or layer norm is constant
        weights = np.random.default_rng(3).standard_normal(out.shape).astype(np.float32)
        (out * mg.tensor(weights, device=device)).sum().backward()
    return out, [t.grad for t in inputs]


@requires_cuda
@pytest.mark.parametrize("name, function, arrays", OP_CASES, ids=[c[0] for c in OP_CASES])
def test_op_on_gpu_matches_cpu(name, function, arrays):
    out_cpu, grads_cpu = _run_case(function, arrays, "cpu")
    out_gpu, grads_gpu = _run_case(function, arrays, "gpu")
    assert out_gpu.device == "gpu" and out_gpu.dtype is out_cpu.dtype
    np.testing.assert_allclose(out_gpu.numpy(), out_cpu.numpy(), rtol=1e-5, atol=1e-5)
    for grad_cpu, grad_gpu in zip(grads_cpu, grads_gpu):
        assert (grad_cpu is None) == (grad_gpu is None)
        if grad_gpu is not None:
            assert grad_gpu.device == "gpu"
            np.testing.assert_allclose(grad_gpu.numpy(), grad_cpu.numpy(), rtol=1e-4,
                                       atol=1e-5)


@requires_cuda
def test_second_derivative_on_gpu_matches_cpu():
    values, results = _normal(2, 5), []
    for device in ("cpu", "gpu"):
        x = mg.tensor(values, device=device, requires_grad=True)
        weights = mg.tensor(np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5),
                            device=device)
        (grad,) = mg.autograd.grad((x.softmax(-1) * weights).sum(), x, create_graph=True)
        (grad * grad).sum().backward()
        results.append(x.grad.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-6)


@requires_cuda
def test_in_place_updates_on_gpu():
    x = mg.zeros(2, 3, device="gpu")
    with mg.no_grad():
        x.add_(1.0).mul_(3.0).sub_(mg.ones(3, device="gpu"))
        x[0, 1] = 10.0
        x.masked_fill_(x > 5, -1.0)
        x.clamp_(min=0.0)
    np.testing.assert_array_equal(x.numpy(), [[2.0, 0.0, 2.0], [2.0, 2.0, 2.0]])
    mg.manual_seed(0)
    x.normal_()
    x.uniform_(-1, 1)
    assert x.device == "gpu" and (x.numpy() >= -1).all()


# ----------------------------------------------------------------------------- training


def _mlp():
    mg.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))


@requires_cuda
def test_module_to_gpu_keeps_its_parameters():
    model = _mlp()
    params = list(model.parameters())
    assert model.to("cuda") is model
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert all(p.device == "gpu" for p in params)
    out = model(mg.randn(5, 4, device="gpu"))
    assert out.device == "gpu" and out.shape == (5, 3)
    model.cpu()
    assert all(p.device == "cpu" for p in model.parameters())


@requires_cuda
@pytest.mark.parametrize("make_optimizer", [
    lambda p: optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    lambda p: optim.Adam(p, lr=0.01),
    lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1),
])
def test_optimizer_steps_on_gpu_match_cpu(make_optimizer):
    x, target = _normal(6, 4), np.array([0, 1, 2, 0, 1, 2])
    finals = []
    for device in ("cpu", "gpu"):
        model = _mlp().to(device)
        optimizer = make_optimizer(model.parameters())
        for _ in range(3):
            optimizer.zero_grad()
            logits = model(mg.tensor(x, device=device))
            F.cross_entropy(logits, mg.tensor(target, device=device)).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        assert all(p.device == device for p in model.parameters())
        finals.append([p.numpy() for p in model.parameters()])
    for on_cpu, on_gpu in zip(*finals):
        np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-4, atol=1e-5)


@requires_cuda
def test_checkpoint_from_gpu_loads_on_cpu_and_back(tmp_path):
    model = _mlp().to("gpu")
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    F.mse_loss(model(mg.randn(2, 4, device="gpu")), mg.zeros(2, 3, device="gpu")).backward()
    optimizer.step()
    path = tmp_path / "checkpoint.safetensors"
    mg.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    expected = {name: p.numpy() for name, p in model.named_parameters()}

    checkpoint = mg.load(path)
    on_cpu = _mlp()
    on_cpu.load_state_dict(checkpoint["model"])
    for name, p in on_cpu.named_parameters():
        assert p.device == "cpu"
        np.testing.assert_array_equal(p.numpy(), expected[name])

    back_on_gpu = _mlp().to("gpu")
    back_on_gpu.load_state_dict(on_cpu.state_dict())
    resumed = optim.Adam(back_on_gpu.parameters(), lr=0.01)
    resumed.load_state_dict(checkpoint["optimizer"])
    for name, p in back_on_gpu.named_parameters():
        assert p.device == "gpu"
        np.testing.assert_array_equal(p.numpy(), expected[name])
    F.mse_loss(back_on_gpu(mg.randn(2, 4, device="gpu")), mg.zeros(2, 3, device="gpu")).backward()
    resumed.step()


# ----------------------------------------------------------------------------- kernels


def _cupy():
    return mg.backend.cupy_or_none()


@requires_cuda
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (4, 300), (2, 3, 1000)])
def test_gpu_row_kernels_match_twins_on_cupy_arrays(shape, dtype):
    from minigrad.kernels import cuda as gpu_kernels
    twins = importlib.import_module("minigrad.kernels.softmax")  # the module of the twins

    cp = _cupy()
    x = cp.asarray(_normal(*shape) * 5, dtype=dtype)
    g = cp.asarray(_normal(*shape), dtype=dtype)
    x[0, ...] = -cp.inf  # a fully masked row
    tolerance = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12)
    y, z = gpu_kernels.softmax(x), gpu_kernels.log_softmax(x)
    cp.testing.assert_allclose(y, twins.softmax_twin(x), **tolerance)
    cp.testing.assert_allclose(z, twins.log_softmax_twin(x), **tolerance)
    cp.testing.assert_allclose(gpu_kernels.softmax_backward(y, g),
                               twins.softmax_backward_twin(y, g), **tolerance)
    finite = z[1:]
    cp.testing.assert_allclose(gpu_kernels.log_softmax_backward(finite, g[1:]),
                               twins.log_softmax_backward_twin(finite, g[1:]), **tolerance)


@requires_cuda
@pytest.mark.parametrize("shapes", [((33, 70), (70, 19)), ((2, 3, 17, 40), (40, 5)),
                                    ((4, 1, 9, 8), (3, 8, 7)), ((8,), (8, 3)), ((0, 4), (4, 2))])
def test_gpu_matmul_kernel_matches_cublas(shapes):
    from minigrad.kernels import cuda as gpu_kernels

    cp = _cupy()
    a, b = cp.asarray(_normal(*shapes[0])), cp.asarray(_normal(*shapes[1]))
    cp.testing.assert_allclose(gpu_kernels.matmul(a, b), cp.matmul(a, b), rtol=1e-4, atol=1e-5)


@requires_cuda
def test_gpu_kernels_run_on_cupys_current_stream():
    from minigrad.kernels import cuda as gpu_kernels
    twins = importlib.import_module("minigrad.kernels.softmax")  # the module of the twins

    cp = _cupy()
    with cp.cuda.Stream(non_blocking=True):
        x = cp.asarray(_normal(64, 257))
        y = gpu_kernels.softmax(x)
        expected = twins.softmax_twin(x)
    cp.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@requires_cuda
def test_kernel_mode_numba_selects_the_gpu_kernels_only_for_cupy_float_arrays():
    from minigrad.kernels import cuda as gpu_kernels

    cp = _cupy()
    with kernels.mode("numba"):
        assert gpu_kernels.eligible(cp.ones((2, 3), np.float32))
        assert not gpu_kernels.eligible(cp.ones((2, 3), np.float16))
        assert not gpu_kernels.eligible(np.ones((2, 3), np.float32))
    with kernels.mode("auto"):
        assert not gpu_kernels.eligible(cp.ones((2, 3), np.float32))
    values, grads = _normal(4, 6), []
    with kernels.mode("numba"):
        for device in ("cpu", "gpu"):
            x = mg.tensor(values, device=device, requires_grad=True)
            (x.softmax(-1) * mg.arange(6, device=device)).sum().backward()
            grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)
