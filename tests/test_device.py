"""mg.device as torch.device (spellings, str/repr, equality, hashing, errors), where
devices are accepted, and the one reader of `.to(...)` arguments that Tensor.to and
Module.to share. PyTorch (CPU build) is the oracle where it is installed."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from helpers import requires_cuda

import minigrad as mg
from minigrad import nn

SPELLINGS = [("cpu",), ("cpu", 0), ("cpu:1",), ("cuda",), ("cuda", 0), ("cuda:0",),
             ("cuda", 1), ("cuda:3",)]


# ----------------------------------------------------------------------------- mg.device


@pytest.mark.parametrize("args", SPELLINGS, ids=str)
def test_devices_read_and_print_as_pytorchs(args):
    torch = pytest.importorskip("torch")
    ours, theirs = mg.device(*args), torch.device(*args)
    assert (ours.type, ours.index) == (theirs.type, theirs.index)
    assert (str(ours), repr(ours)) == (str(theirs), repr(theirs))
    assert mg.device(ours) == ours and mg.device(type=args[0]).type == theirs.type


def test_gpu_is_another_spelling_of_cuda():
    assert mg.device("gpu") == mg.device("cuda") and str(mg.device("gpu")) == "cuda"
    assert mg.device("gpu:0") == mg.device("cuda", 0) == mg.device(0)
    assert repr(mg.device("gpu", 2)) == "device(type='cuda', index=2)"
    assert mg.Device is mg.device


def test_equality_and_hashing_follow_pytorch():
    torch = pytest.importorskip("torch")
    for a in SPELLINGS:
        for b in SPELLINGS:
            assert (mg.device(*a) == mg.device(*b)) == (torch.device(*a) == torch.device(*b))
    by_device = {mg.device("cuda", 0): "gpu", mg.device("cpu"): "cpu"}
    assert by_device[mg.device("cuda:0")] == "gpu" and by_device[mg.device("cpu")] == "cpu"
    assert len({mg.device("cuda"), mg.device("cuda:0"), mg.device("gpu", 0)}) == 2


def test_a_device_equals_the_strings_that_name_it():
    """A minigrad extension (PyTorch's devices never equal strings): a missing index names
    the current GPU, so code comparing x.device == "cuda" (or "gpu") works."""
    gpu = mg.device("cuda", 0)
    assert gpu == "cuda" and gpu == "gpu" and gpu == "cuda:0" and gpu == "gpu:0"
    assert gpu != "cuda:1" and gpu != "cpu" and gpu != "tpu" and gpu != 0
    assert mg.zeros(1).device == "cpu" and mg.zeros(1).device != "cuda"


@pytest.mark.parametrize("args, error, match", [
    (("tpu",), RuntimeError, "unknown device 'tpu'"),
    (("CUDA",), RuntimeError, "unknown device 'CUDA'"),
    (("cuda:x",), RuntimeError, "unknown device 'cuda:x'"),
    (("cuda:-1",), RuntimeError, "unknown device 'cuda:-1'"),
    (("cuda", -1), RuntimeError, "must not be negative, got -1"),
    (("cuda:0", 1), RuntimeError, "must not include an index"),
    (("cuda", True), TypeError, "index must be an int, got True"),
    ((None,), TypeError, "got None"),
    ((1.5,), TypeError, "got 1.5"),
    ((mg.device("cpu"), 0), TypeError, "which has its own"),
], ids=str)
def test_bad_devices_raise_saying_what_was_expected(args, error, match):
    with pytest.raises(error, match=match):
        mg.device(*args)


@pytest.mark.parametrize("args", [("tpu",), ("CUDA",), ("cuda:x",), ("cuda", -1), ("cuda:0", 1)],
                         ids=str)
def test_pytorch_refuses_the_same_devices_with_the_same_error(args):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        torch.device(*args)
    with pytest.raises(RuntimeError):
        mg.device(*args)


def test_devices_are_immutable_and_pickle():
    gpu = mg.device("cuda", 0)
    with pytest.raises(AttributeError):
        gpu.type = "cpu"
    assert pickle.loads(pickle.dumps(gpu)) == gpu
    assert pickle.loads(pickle.dumps(mg.device("cpu"))).index is None


# ----------------------------------------------------------------------------- where devices go


def test_a_tensors_device_is_a_device():
    x = mg.zeros(2)
    assert isinstance(x.device, mg.device) and repr(x.device) == "device(type='cpu')"
    assert str(x.device) == "cpu" and not x.is_cuda


@pytest.mark.parametrize("make", [
    lambda where: mg.zeros(2, device=where),
    lambda where: mg.tensor([1.0, 2.0], device=where),
    lambda where: mg.arange(3, device=where),
    lambda where: mg.randn(2, generator=mg.Generator(device=where), device=where),
    lambda where: mg.zeros_like(mg.ones(2), device=where),
    lambda where: mg.ones(2).to(where),
    lambda where: mg.ones(2).to(device=where),
    lambda where: nn.Linear(2, 2).to(where).weight,
], ids=["zeros", "tensor", "arange", "randn", "zeros_like", "to", "to_keyword", "module_to"])
@pytest.mark.parametrize("where", [("cpu",), ("cpu", 0), "cpu"], ids=str)
def test_devices_are_accepted_wherever_a_device_is(make, where):
    where = mg.device(*where) if isinstance(where, tuple) else where
    assert make(where).device == mg.device("cpu")


def test_load_takes_a_device_as_map_location(tmp_path):
    mg.save({"w": mg.ones(2)}, tmp_path / "ckpt")
    for location in (mg.device("cpu"), {mg.device("cpu"): mg.device("cpu")}):
        assert mg.load(tmp_path / "ckpt", map_location=location)["w"].device == "cpu"


def test_other_gpus_than_the_first_are_refused():
    for where in ("cuda:1", mg.device("cuda", 1), 2):
        with pytest.raises(RuntimeError, match="minigrad uses one GPU, cuda:0"):
            mg.zeros(1, device=where)


@pytest.mark.usefixtures("without_cuda")
def test_the_gpu_as_a_device_object_without_cuda_says_why():
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        mg.zeros(1, device=mg.device("cuda", 0))


@requires_cuda
def test_gpu_tensors_print_their_device_as_pytorch_does():
    x = mg.ones(2, device=mg.device("cuda"))
    assert x.device == mg.device("cuda", 0) and x.is_cuda
    assert (str(x.device), repr(x.device)) == ("cuda:0", "device(type='cuda', index=0)")
    assert "device='cuda:0'" in repr(x)
    for moved in (mg.ones(2).cuda(), mg.ones(2).to(0), mg.ones(2).to(mg.device("gpu")),
                  mg.ones(2).to(x), nn.Linear(2, 2).to(mg.device("cuda", 0)).weight):
        assert moved.device == mg.device("cuda", 0)


# ----------------------------------------------------------------------------- .to arguments

TO_FORMS = {
    "dtype": lambda lib, x, other: x.to(lib.float64),
    "dtype_non_blocking": lambda lib, x, other: x.to(lib.float16, True),
    "dtype_copy": lambda lib, x, other: x.to(lib.float32, False, True),
    "device_dtype": lambda lib, x, other: x.to("cpu", lib.int32),
    "device_dtype_flags": lambda lib, x, other: x.to("cpu", lib.float64, False, True),
    "keywords": lambda lib, x, other: x.to(dtype=lib.int64, device=lib.device("cpu")),
    "device_then_dtype_keyword": lambda lib, x, other: x.to("cpu", dtype=lib.float64),
    "same_dtype": lambda lib, x, other: x.to(lib.float32),
    "same_device": lambda lib, x, other: x.to("cpu"),
    "tensor": lambda lib, x, other: x.to(other),
    "tensor_copy": lambda lib, x, other: x.to(other, copy=True),
    "nothing": lambda lib, x, other: x.to(),
    "none": lambda lib, x, other: x.to(None),
    "python_float": lambda lib, x, other: x.to(float),
    "python_int": lambda lib, x, other: x.to(int),
}


@pytest.mark.parametrize("form", TO_FORMS)
def test_to_reads_its_arguments_as_pytorch_does(form):
    torch = pytest.importorskip("torch")
    values = np.array([[1.5, -2.0, 3.25]], np.float32)
    x, other = mg.tensor(values), mg.zeros(1, dtype=mg.int16)
    theirs_x, theirs_other = torch.tensor(values), torch.zeros(1, dtype=torch.int16)
    ours = TO_FORMS[form](mg, x, other)
    theirs = TO_FORMS[form](torch, theirs_x, theirs_other)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert str(ours.device) == str(theirs.device) and (ours is x) == (theirs is theirs_x)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_to_numpy_dtypes_and_names():
    x = mg.ones(2)
    assert x.to(np.float64).dtype is mg.float64 and x.to(np.dtype("int8")).dtype is mg.int8
    assert x.to("float16").dtype is mg.float16 and x.to("cpu", "uint8").dtype is mg.uint8


@pytest.mark.parametrize("call, match", [
    (lambda lib, x: x.to(lib.float32, lib.float64), "non_blocking must be a bool"),
    (lambda lib, x: x.to("cpu", "cpu"), "expected a dtype"),
    (lambda lib, x: x.to(lib.float64, dtype=lib.float64), "repeated keyword 'dtype'"),
    (lambda lib, x: x.to(device="cpu", dtype=lib.float64, foo=1), "keyword 'foo'"),
    (lambda lib, x: x.to(x, dtype=lib.float64), "tensor given with a device or dtype"),
    (lambda lib, x: x.to("cpu", lib.float64, False, False, False), "more than 4 positional"),
], ids=["two_dtypes", "two_devices", "dtype_twice", "unknown_keyword", "tensor_and_dtype",
        "too_many"])
def test_to_refuses_what_pytorch_refuses_naming_the_forms(call, match):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError):
        call(torch, torch.ones(2))
    with pytest.raises(TypeError, match=f"^to: .*{match}"):
        call(mg, mg.ones(2))


def test_to_refuses_a_value_that_is_neither_device_nor_dtype():
    with pytest.raises(TypeError, match="expected a device .* got 3.5"):
        mg.ones(2).to(3.5)


def test_to_with_copy_gives_a_new_tensor_that_passes_gradients():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    copied = x.to(x.dtype, copy=True)
    assert copied is not x and not np.shares_memory(copied.numpy(), x.numpy())
    (copied * mg.tensor([4.0, 5.0, 6.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 5.0, 6.0])


def test_to_another_dtype_passes_gradients_back_in_the_inputs_dtype():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x.to(mg.float64) * mg.tensor([3.0, -1.0], dtype=mg.float64)).sum().backward()
    assert x.grad.dtype is mg.float32 and x.grad.tolist() == [3.0, -1.0]


# ----------------------------------------------------------------------------- Module.to


@pytest.mark.parametrize("call", [
    lambda m: m.to(np.float64),
    lambda m: m.to(mg.float64),
    lambda m: m.to("float64"),
    lambda m: m.to("cpu", mg.float64),
    lambda m: m.to(dtype=mg.float64),
    lambda m: m.to(mg.device("cpu"), mg.float64, False),
    lambda m: m.to(mg.zeros(1, dtype=mg.float64)),
], ids=["numpy_type", "dtype", "name", "device_dtype", "keyword", "non_blocking", "tensor"])
def test_module_to_reads_the_arguments_tensor_to_reads(call):
    model = nn.Linear(2, 2)
    weight = model.weight
    assert call(model) is model and model.weight is weight
    assert model.weight.dtype is mg.float64 and model.bias.dtype is mg.float64


def test_module_to_refuses_integer_dtypes_and_copy_as_pytorch_does():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="floating point"):
        torch.nn.Linear(2, 2).to(torch.int64)
    with pytest.raises(TypeError, match="Module.to only accepts floating point dtypes, got "
                                        "minigrad.int64"):
        nn.Linear(2, 2).to(mg.int64)
    with pytest.raises(RuntimeError, match="copy"):
        torch.nn.Linear(2, 2).to("cpu", copy=True)
    with pytest.raises(RuntimeError, match="Module.to: copy=True"):
        nn.Linear(2, 2).to("cpu", copy=True)
    with pytest.raises(TypeError, match="Module.to: invalid arguments"):
        nn.Linear(2, 2).to("cpu", "cpu", "cpu")
