"""The GPU backend: devices, moving tensors, modules, optimizers and checkpoints on the GPU,
and the numba.cuda kernels on CuPy arrays (every op family on the GPU against the CPU:
test_gpu_ops.py).

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
from helpers import requires_cuda

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import kernels, nn, optim

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


# ----------------------------------------------------------------------------- training

RNG = np.random.default_rng(7)


def _normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)



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
