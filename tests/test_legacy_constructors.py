"""PyTorch's older tensor API: the tensor types mg.FloatTensor, mg.LongTensor, ... (and
mg.cuda.*) as constructors and in isinstance, Tensor.type() and its names, the dtype
methods (.int(), .short(), .byte(), .char()), and Tensor.t() / t_(). PyTorch (CPU build)
is the oracle."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import requires_cuda

import minigrad as mg

torch = pytest.importorskip("torch")
TYPES = ["BoolTensor", "ByteTensor", "CharTensor", "ShortTensor", "IntTensor", "LongTensor",
         "HalfTensor", "FloatTensor", "DoubleTensor"]


def _name(torch_dtype) -> str:
    return str(torch_dtype).removeprefix("torch.")


# ----------------------------------------------------------------------------- Tensor.type


@pytest.mark.parametrize("name", ["bool", "uint8", "int8", "int16", "int32", "int64",
                                  "float16", "float32", "float64"])
def test_type_names_the_tensor_type_as_pytorch_does(name):
    ours = mg.zeros(1, dtype=getattr(mg, name)).type()
    theirs = torch.zeros(1, dtype=getattr(torch, name)).type()
    assert ours == theirs.replace("torch.", "minigrad.")


@pytest.mark.parametrize("target", [
    lambda lib: lib.float64, lambda lib: lib.IntTensor, lambda lib: "torch.IntTensor",
    lambda lib: "torch.ByteTensor", lambda lib: lib.float32, lambda lib: "torch.FloatTensor",
], ids=["dtype", "type", "torch_name", "byte_name", "same_dtype", "same_name"])
def test_type_converts_as_pytorch_does(target):
    values = np.array([[1.5, -2.0, 3.75]], np.float32)
    x, theirs_x = mg.tensor(values), torch.tensor(values)
    ours, theirs = x.type(target(mg)), theirs_x.type(target(torch))
    assert ours.dtype.name == _name(theirs.dtype) and (ours is x) == (theirs is theirs_x)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_type_reads_minigrads_names_and_keywords():
    x = mg.tensor([1.5, 2.0])
    assert x.type("minigrad.LongTensor").tolist() == [1, 2]
    assert x.type(dtype=mg.float16, non_blocking=True).dtype is mg.float16
    assert x.type(mg.IntTensor, False).dtype is mg.int32


@pytest.mark.parametrize("name", ["float64", "torch.float64", "FloatTensor", "torch.FloatTensr",
                                  "minigrad.cuda.FloatTensorx"])
def test_type_refuses_names_that_are_not_tensor_types_as_pytorch_does(name):
    with pytest.raises(ValueError):
        torch.ones(1).type(name)
    with pytest.raises(ValueError, match=f"type: invalid type '{name}'.*minigrad.FloatTensor"):
        mg.ones(1).type(name)
    with pytest.raises(TypeError, match="type: expected a dtype"):
        mg.ones(1).type(3)


def test_type_is_differentiable():
    x = mg.tensor([1.0, -2.0], requires_grad=True)
    y = x.type(mg.DoubleTensor)
    assert y.dtype is mg.float64
    (y * mg.tensor([3.0, 0.5], dtype=mg.float64)).sum().backward()
    assert x.grad.dtype is mg.float32 and x.grad.tolist() == [3.0, 0.5]


@pytest.mark.parametrize("method", ["int", "short", "char", "byte", "long", "half", "float",
                                    "double", "bool"])
def test_dtype_methods_match_pytorch(method):
    values = np.array([1.75, -2.5, 0.0, 300.25])
    ours = getattr(mg.tensor(values), method)()
    theirs = getattr(torch.tensor(values), method)()
    assert ours.dtype.name == _name(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ----------------------------------------------------------------------------- constructors


@pytest.mark.parametrize("name", TYPES)
def test_constructors_from_data_match_pytorch(name):
    data = [[1.75, 0.0, 3.0], [100.0, 2.5, 7.25]]
    ours, theirs = getattr(mg, name)(data), getattr(torch, name)(data)
    assert ours.dtype.name == _name(theirs.dtype) and ours.device == "cpu"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    array = np.array(data)
    np.testing.assert_array_equal(getattr(mg, name)(array).numpy(),
                                  getattr(torch, name)(array).numpy())


@pytest.mark.parametrize("args", [(2, 3), (0,), (4,), (mg.Size([2, 1, 3]),), ()], ids=str)
def test_constructors_from_sizes_make_uninitialised_tensors_of_that_shape(args):
    theirs_args = tuple(torch.Size(a) if isinstance(a, mg.Size) else a for a in args)
    for name in ("FloatTensor", "LongTensor", "BoolTensor"):
        ours, theirs = getattr(mg, name)(*args), getattr(torch, name)(*theirs_args)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.dtype.name == _name(theirs.dtype)


def test_a_tuple_is_data_and_a_size_is_a_shape():
    assert mg.FloatTensor((2, 3)).tolist() == torch.FloatTensor((2, 3)).tolist() == [2.0, 3.0]
    assert mg.FloatTensor(mg.Size([2, 3])).shape == (2, 3)
    assert mg.FloatTensor(np.int64(2), 3).shape == (2, 3)


def test_a_constructor_given_a_tensor_of_its_type_shares_its_memory():
    source = mg.tensor([1.0, 2.0], requires_grad=True)
    alias = mg.FloatTensor(source)
    assert alias is not source and alias.grad_fn is None and not alias.requires_grad
    with mg.no_grad():
        source[0] = 5.0
    assert alias.tolist() == [5.0, 2.0]
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.ones(2, dtype=torch.int64))
    with pytest.raises(TypeError, match="FloatTensor: expected a minigrad.float32 tensor on "
                                        "cpu, got a minigrad.int64 tensor"):
        mg.FloatTensor(mg.ones(2, dtype=mg.int64))


@pytest.mark.parametrize("args, kwargs, error, match", [
    ((2.5,), {}, TypeError, r"expected data .* got \(float\)"),
    ((2, [3]), {}, TypeError, r"got \(int, list\)"),
    ((2, True), {}, TypeError, r"got \(int, bool\)"),
    ((-1,), {}, ValueError, "size must be non-negative"),
    ((2,), {"device": "cuda"}, RuntimeError, "makes cpu tensors"),
    ((2,), {"dtype": mg.int32}, TypeError, "dtype"),
], ids=["float", "size_and_list", "bool_size", "negative", "device", "dtype"])
def test_constructors_refuse_bad_arguments_naming_themselves(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        mg.FloatTensor(*args, **kwargs)


def test_isinstance_asks_the_dtype_and_device():
    x = mg.ones(2)
    assert isinstance(x, mg.FloatTensor) and isinstance(x, mg.Tensor)
    assert not isinstance(x, mg.DoubleTensor) and not isinstance(x, mg.cuda.FloatTensor)
    assert isinstance(x.long(), mg.LongTensor) and not isinstance(np.ones(2), mg.FloatTensor)
    assert isinstance(torch.ones(2), torch.FloatTensor)
    assert not issubclass(mg.FloatTensor, mg.Tensor)
    assert not issubclass(torch.FloatTensor, torch.Tensor)


def test_tensor_types_carry_pytorchs_attributes():
    for name in TYPES:
        ours, theirs = getattr(mg, name), getattr(torch, name)
        assert ours.dtype.name == _name(theirs.dtype) and ours.is_cuda is theirs.is_cuda
        assert repr(ours) == repr(theirs).replace("torch.", "minigrad.")
        assert getattr(mg.cuda, name).is_cuda and getattr(mg.cuda, name).dtype is ours.dtype
    assert repr(mg.cuda.FloatTensor) == "<class 'minigrad.cuda.FloatTensor'>"
    with pytest.raises(AttributeError, match="minigrad.cuda.*NoSuchTensor"):
        mg.cuda.NoSuchTensor  # noqa: B018


@pytest.mark.usefixtures("without_cuda")
def test_gpu_types_without_cuda_say_why():
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        mg.cuda.FloatTensor(2)
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        mg.ones(2).type("torch.cuda.FloatTensor")


@requires_cuda
def test_gpu_types_make_gpu_tensors_and_name_them():
    x = mg.cuda.LongTensor([1, 2])
    assert x.device == mg.device("cuda", 0) and x.dtype is mg.int64
    assert x.type() == "minigrad.cuda.LongTensor" and isinstance(x, mg.cuda.LongTensor)
    assert not isinstance(x, mg.LongTensor) and mg.cuda.HalfTensor(2, 3).shape == (2, 3)
    moved = mg.ones(2).type("torch.cuda.DoubleTensor")
    assert moved.is_cuda and moved.dtype is mg.float64
    back = moved.type(mg.FloatTensor)
    assert back.device == "cpu" and back.dtype is mg.float32
    assert moved.type(mg.float16).is_cuda  # a dtype keeps the device


# ----------------------------------------------------------------------------- t and t_


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 4)], ids=str)
def test_t_transposes_matrices_and_keeps_smaller_tensors_as_pytorch_does(shape):
    values = np.arange(float(np.prod(shape))).reshape(shape) * 1.5 - 2
    ours, theirs = mg.tensor(values).t(), torch.tensor(values).t()
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_t_of_a_transposed_view_is_a_view_and_differentiable():
    x = mg.tensor(np.arange(6.0).reshape(3, 2) - 2.5, requires_grad=True)
    weights = mg.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
    y = x.T.t()  # a view of a view: x's own layout
    assert np.shares_memory(y.array, x.array) and y.shape == (3, 2)
    (x.t() * weights).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), weights.numpy().T)


def test_t_refuses_more_than_two_dims_as_pytorch_does():
    with pytest.raises(RuntimeError):
        torch.ones(2, 3, 4).t()
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, got "
                                           r"shape \(2, 3, 4\)"):
        mg.ones(2, 3, 4).t()


def test_t_in_place_transposes_the_tensor_itself():
    x = mg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    version = x._version[0]
    assert x.t_() is x and x.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert x._version[0] == version + 1  # a backward that saved x now raises
    vector = mg.tensor([1.0, 2.0])
    assert vector.t_().tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="t\\(\\) expects"):
        mg.ones(2, 2, 2).t_()


def test_t_in_place_is_refused_for_tensors_that_require_grad():
    leaf = mg.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3, requires_grad=True).t_()
    with pytest.raises(RuntimeError, match="t_: a tensor that requires grad"):
        leaf.t_()
    with mg.no_grad():
        assert leaf.t_().shape == (3, 2)
