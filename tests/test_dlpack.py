"""DLPack and the array protocol: mg.from_dlpack, Tensor.__dlpack__/__dlpack_device__ and
Tensor.__array__, with NumPy and PyTorch on the CPU and with CuPy on the GPU. Memory is
shared both ways, dtypes, shapes and strides survive, autograd does not cross."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import requires_cuda

import minigrad as mg

DTYPES = [np.float16, np.float32, np.float64, np.uint8, np.int8, np.int16, np.int32, np.int64,
          np.bool_]


def _values(dtype, shape=(3, 4)) -> np.ndarray:
    return (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)


# ----------------------------------------------------------------------------- NumPy


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_array_to_tensor_shares_memory_both_ways(dtype):
    array = _values(dtype)
    t = mg.from_dlpack(array)
    assert t.shape == (3, 4) and t.dtype.np == np.dtype(dtype) and t.device == "cpu"
    array[0, 0] = 1
    assert t[0, 0].item() == 1
    with mg.no_grad():
        t[2, 3] = 0
    assert array[2, 3] == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_to_numpy_shares_memory_both_ways(dtype):
    t = mg.tensor(_values(dtype))
    array = np.from_dlpack(t)
    assert array.shape == (3, 4) and array.dtype == np.dtype(dtype)
    array[1, 1] = 1
    assert t[1, 1].item() == 1
    t.array[0, 2] = 0
    assert array[0, 2] == 0
    assert t.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("view", [lambda a: a.T, lambda a: a[:, ::2], lambda a: a[1:, 1:3],
                                  lambda a: a[None, 0]], ids=["T", "step", "block", "0d-axis"])
def test_non_contiguous_layouts_cross_in_both_directions(view):
    base = np.arange(20.0).reshape(4, 5)
    t = mg.from_dlpack(view(base))
    np.testing.assert_array_equal(t.numpy(), view(base))
    assert (t.exp() * 2).shape == view(base).shape  # ops take the strided array
    back = np.from_dlpack(mg.tensor(base).T[1:, ::2])
    np.testing.assert_array_equal(back, base.T[1:, ::2])


def test_zero_dim_and_empty_tensors_cross():
    assert mg.from_dlpack(np.array(2.5)).shape == ()
    assert np.from_dlpack(mg.tensor(3.0)).shape == ()
    assert mg.from_dlpack(np.zeros((0, 3))).shape == (0, 3)
    assert np.from_dlpack(mg.zeros(2, 0)).shape == (2, 0)


def test_autograd_does_not_cross():
    leaf = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="require gradient.*detach"):
        np.from_dlpack(leaf)
    shared = np.from_dlpack(leaf.detach())
    shared[0] = 5.0
    assert leaf[0].item() == 5.0
    imported = mg.from_dlpack(np.ones(2))
    assert imported.grad_fn is None and not imported.requires_grad and imported.is_leaf
    out = (mg.from_dlpack(np.from_dlpack((leaf * 2).detach())) * leaf).sum()
    out.backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [10.0, 4.0])  # only the direct path


def test_unsupported_producers_and_dtypes_are_refused():
    with pytest.raises(TypeError, match="__dlpack__"):
        mg.from_dlpack([1.0, 2.0])
    with pytest.raises(TypeError, match="uint16"):
        mg.from_dlpack(np.arange(3, dtype=np.uint16))


def test_array_protocol_of_a_cpu_tensor():
    t = mg.tensor([[1.0, 2.0]])
    assert np.asarray(t) is t.array  # no copy
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    copied = np.array(t)
    copied[0, 0] = 9.0
    assert t[0, 0].item() == 1.0
    with pytest.raises(ValueError, match="copy"):
        t.__array__(np.float64, copy=False)


# ----------------------------------------------------------------------------- PyTorch


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "uint8", "int8", "int16",
                                   "int32", "int64", "bool"])
def test_torch_round_trip_shares_memory_and_keeps_dtype(dtype):
    torch = pytest.importorskip("torch")
    source = torch.ones(2, 3, dtype=getattr(torch, dtype))
    t = mg.from_dlpack(source)
    assert t.dtype.name == dtype and t.shape == (2, 3)
    source[0, 0] = 0
    assert t[0, 0].item() == 0
    back = torch.from_dlpack(t)
    assert back.dtype == source.dtype and tuple(back.shape) == (2, 3)
    back[1, 2] = 0
    assert t[1, 2].item() == 0 and source[1, 2].item() == 0


def test_torch_dtypes_minigrad_lacks_are_refused_by_name():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="from_dlpack.*uint16"):
        mg.from_dlpack(torch.ones(2, dtype=torch.uint16))
    with pytest.raises(RuntimeError, match="from_dlpack: cannot import.*dtype"):
        mg.from_dlpack(torch.ones(2, dtype=torch.bfloat16))


def test_torch_non_contiguous_tensors_cross():
    torch = pytest.importorskip("torch")
    base = torch.arange(12.0).reshape(3, 4)
    t = mg.from_dlpack(base.T[::2])
    np.testing.assert_array_equal(t.numpy(), base.T[::2].numpy())
    back = torch.from_dlpack(mg.tensor(base.numpy()).T[1:])
    assert back.stride() != back.contiguous().stride()
    np.testing.assert_array_equal(back.numpy(), base.T[1:].numpy())


def test_torch_autograd_does_not_cross():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="detach"):
        torch.from_dlpack(mg.ones(2, requires_grad=True))
    source = torch.ones(2, requires_grad=True)
    with pytest.raises((RuntimeError, BufferError), match="from_dlpack.*gradient"):
        mg.from_dlpack(source)
    t = mg.from_dlpack(source.detach())
    assert not t.requires_grad and t.grad_fn is None


# ----------------------------------------------------------------------------- GPU


@requires_cuda
def test_cupy_array_to_gpu_tensor_and_back_share_memory():
    cp = mg.backend.cupy_or_none()
    array = cp.zeros((2, 3), dtype=np.float32)
    t = mg.from_dlpack(array)
    assert t.device == "gpu" and t.dtype is mg.float32 and t.__dlpack_device__() == (2, 0)
    array[0, 1] = 4.0
    assert t[0, 1].item() == 4.0
    back = cp.from_dlpack(t)
    back[1, 2] = 7.0
    assert array[1, 2].item() == 7.0 and t[1, 2].item() == 7.0
    strided = mg.from_dlpack(array.T[::2])
    np.testing.assert_array_equal(strided.numpy(), array.T[::2].get())


@requires_cuda
def test_gpu_tensors_are_not_host_arrays():
    on_gpu = mg.ones(2, device="gpu")
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        np.asarray(on_gpu)
    with pytest.raises((RuntimeError, BufferError, TypeError)):
        np.from_dlpack(on_gpu)  # device memory: NumPy cannot take it
    np.testing.assert_array_equal(np.asarray(on_gpu.cpu()), [1.0, 1.0])
