"""Tensors: creation, dtypes and PyTorch's type promotion, indexing (scatter-add of
repeated indices), in-place ops and the version counter, conversions."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import make_tensor

import minigrad as mg

pytestmark = pytest.mark.device  # tensors via make_tensor follow --device

# ----------------------------------------------------------------------------- creation


def test_tensor_infers_default_dtypes_and_copies():
    assert mg.tensor([1.0, 2.0]).dtype is mg.float32
    assert mg.tensor([1, 2]).dtype is mg.int64
    assert mg.tensor([True, False]).dtype is mg.bool
    assert mg.tensor(3.5).shape == ()
    array = np.array([1.0, 2.0])
    t = mg.tensor(array)
    assert t.dtype is mg.float64  # an array keeps its dtype, as torch.tensor does
    array[0] = 10
    assert t.tolist() == [1.0, 2.0]


def test_from_numpy_shares_memory():
    array = np.array([1.0, 2.0], dtype=np.float32)
    t = mg.from_numpy(array)
    array[0] = 5
    assert t.dtype is mg.float32 and t.tolist() == [5.0, 2.0]
    with pytest.raises(TypeError, match="numpy.ndarray"):
        mg.from_numpy([1, 2])


def test_creation_functions():
    assert mg.zeros(2, 3).shape == (2, 3) and mg.zeros((2, 3)).dtype is mg.float32
    assert mg.ones(2, dtype=mg.float64).tolist() == [1.0, 1.0]
    assert mg.full((2,), 7).dtype is mg.int64 and mg.full((2,), 7).tolist() == [7, 7]
    assert mg.full((2,), 0.5).dtype is mg.float32
    like = mg.zeros_like(mg.ones(2, 2, dtype=mg.float64))
    assert like.dtype is mg.float64 and like.tolist() == [[0, 0], [0, 0]]
    assert mg.ones_like(mg.zeros(3)).tolist() == [1, 1, 1]
    assert mg.arange(4).tolist() == [0, 1, 2, 3] and mg.arange(4).dtype is mg.int64
    assert mg.arange(1, 2, 0.5).dtype is mg.float32
    assert mg.eye(2).tolist() == [[1, 0], [0, 1]]
    assert mg.ones(2, requires_grad=True).requires_grad


def test_random_creation_is_seeded():
    mg.manual_seed(3)
    first = (mg.rand(4).numpy(), mg.randn(2, 2).numpy(), mg.randint(0, 5, (6,)).numpy())
    mg.manual_seed(3)
    second = (mg.rand(4).numpy(), mg.randn(2, 2).numpy(), mg.randint(0, 5, (6,)).numpy())
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert ((first[0] >= 0) & (first[0] < 1)).all()
    assert first[2].dtype == np.int64 and ((first[2] >= 0) & (first[2] < 5)).all()
    assert mg.randn(3, dtype=mg.float64).dtype is mg.float64


def test_attributes():
    t = mg.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.numel() == 24
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.device == "cpu" and str(t.device) == "cpu"
    assert t.T.shape == (4, 3, 2)
    assert len(t) == 2
    assert "tensor(" in repr(t)


# ----------------------------------------------------------------------------- promotion


def _make(kind):
    """A value of the given kind: '<dtype>' tensor, '<dtype>_0d' 0-d tensor, or a scalar."""
    if kind == "int":
        return 2
    if kind == "float":
        return 2.5
    if kind == "bool":
        return True
    dtype_name, _, zero_d = kind.partition("_")
    shape = () if zero_d else (2,)
    return mg.ones(shape, dtype=getattr(mg, dtype_name))


PROMOTION = [  # PyTorch's results
    ("float32", "float", "float32"),      # a float32 tensor times a Python float stays
    ("int64", "float", "float32"),        # int tensor times a float: the default float
    ("int64", "int", "int64"),
    ("bool", "int", "int64"),
    ("bool", "bool", "bool"),
    ("float16", "float", "float16"),
    ("float16", "float32", "float32"),
    ("float32", "float64", "float64"),
    ("int64", "float16", "float16"),
    ("int64", "bool", "int64"),
    ("float32", "float64_0d", "float32"),  # a 0-d tensor does not widen within a category
    ("int64", "float64_0d", "float64"),    # ...but lifts the category with its own dtype
    ("float64_0d", "float32", "float32"),
    ("int64_0d", "float16", "float16"),
]


@pytest.mark.parametrize("left, right, expected", PROMOTION)
def test_type_promotion_follows_pytorch(left, right, expected):
    a, b = _make(left), _make(right)
    if not isinstance(a, mg.Tensor) and not isinstance(b, mg.Tensor):
        pytest.skip("needs a tensor")
    for result in (a + b, b + a, a * b):
        if expected == "bool":
            assert result.dtype is mg.int64 or result.dtype is mg.bool
        else:
            assert result.dtype is getattr(mg, expected), (left, right, result.dtype)


@pytest.mark.parametrize("left, right, expected", PROMOTION)
def test_type_promotion_table_agrees_with_torch(left, right, expected):
    torch = pytest.importorskip("torch")

    def make(kind):
        value = _make(kind)
        if isinstance(value, mg.Tensor):
            return torch.ones(tuple(value.shape), dtype=getattr(torch, value.dtype.name))
        return value

    result = torch.result_type(make(left), make(right))
    if expected != "bool":
        assert result == getattr(torch, expected)


def test_integer_division_and_transcendentals_give_default_float():
    assert (mg.tensor([1, 2]) / mg.tensor([2, 2])).dtype is mg.float32
    assert (mg.tensor([1, 2]) / 2).tolist() == [0.5, 1.0]
    assert mg.tensor([1, 2]).exp().dtype is mg.float32
    assert (mg.tensor([4]) ** 0.5).dtype is mg.float32
    assert (mg.tensor([2]) ** 2).dtype is mg.int64


def test_comparisons_return_bool_tensors_outside_the_graph():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for result in (x > 2, x >= 2, x < 2, x <= 2, x == 2, x != 2):
        assert result.dtype is mg.bool and result.grad_fn is None
    assert (x > 1.5).tolist() == [False, True, True]
    assert ((x > 1.5) & (x < 2.5)).tolist() == [False, True, False]
    assert ((x < 1.5) | (x > 2.5)).tolist() == [True, False, True]
    assert (~(x > 1.5)).tolist() == [True, False, False]


def test_casts():
    x = mg.tensor([1.7, -2.2])
    assert x.long().tolist() == [1, -2] and x.long().dtype is mg.int64
    assert x.double().dtype is mg.float64 and x.half().dtype is mg.float16
    assert x.float().dtype is mg.float32
    assert x.to(mg.float64).dtype is mg.float64 and x.to("float64").dtype is mg.float64
    assert x.type_as(mg.tensor([1])).dtype is mg.int64
    assert mg.tensor([0.0, 2.0]).bool().tolist() == [False, True]
    assert x.to("cpu") is x and x.cpu() is x


def test_cast_to_integer_drops_the_graph():
    x = mg.tensor([1.5, 2.5], requires_grad=True)
    assert x.long().grad_fn is None and not x.long().requires_grad
    assert x.double().grad_fn is not None


# ----------------------------------------------------------------------------- indexing


def test_basic_indexing_values():
    array = np.arange(24.0).reshape(2, 3, 4)
    t = make_tensor(array)
    for index in [1, -1, (1, 2), slice(None, None, -1), (Ellipsis, 1), (None, 0),
                  (slice(None), slice(None, None, 2), slice(3, 0, -2))]:
        np.testing.assert_array_equal(t[index].numpy(), array[index])


def test_advanced_indexing_values():
    array = np.arange(12.0).reshape(3, 4)
    t = make_tensor(array)
    np.testing.assert_array_equal(t[[2, 0, 2]].numpy(), array[[2, 0, 2]])
    np.testing.assert_array_equal(t[mg.tensor([1, 1]), mg.tensor([0, 3])].numpy(),
                                  array[[1, 1], [0, 3]])
    np.testing.assert_array_equal(t[t > 5].numpy(), array[array > 5])
    np.testing.assert_array_equal(t[:, mg.tensor([True, False, True, False])].numpy(),
                                  array[:, [0, 2]])


def test_repeated_integer_indices_scatter_add_their_gradients():
    x = make_tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    y = x[mg.tensor([0, 2, 0, 0])]
    y.backward(make_tensor(np.array([1.0, 10.0, 100.0, 1000.0])))
    np.testing.assert_array_equal(x.grad.numpy(), [1101.0, 0.0, 10.0])

    x = make_tensor(np.zeros((2, 2)), requires_grad=True)
    x[[1, 1], [0, 0]].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [2, 0]])


def test_setitem_on_tensor_without_grad():
    t = mg.zeros(3, 2)
    version = t._version[0]
    t[0] = 1.0
    t[1:, 1] = mg.tensor([5.0, 6.0])
    t[t > 5.5] = -1.0
    assert t.tolist() == [[1, 1], [0, 5], [0, -1]]
    assert t._version[0] == version + 3


# ----------------------------------------------------------------------------- in place


def test_inplace_ops_values_and_version_counter():
    t = mg.tensor([1.0, 2.0, 3.0])
    steps = [
        (lambda: t.add_(1), [2, 3, 4]),
        (lambda: t.sub_(mg.tensor([1.0, 1.0, 1.0])), [1, 2, 3]),
        (lambda: t.mul_(2), [2, 4, 6]),
        (lambda: t.div_(2), [1, 2, 3]),
        (lambda: t.add_(mg.tensor([1.0, 1.0, 1.0]), alpha=2), [3, 4, 5]),
        (lambda: t.masked_fill_(t > 3.5, 0.0), [3, 0, 0]),
        (lambda: t.clamp_(min=1.0), [3, 1, 1]),
        (lambda: t.copy_(mg.tensor([7.0, 8.0, 9.0])), [7, 8, 9]),
        (lambda: t.fill_(4.0), [4, 4, 4]),
        (lambda: t.zero_(), [0, 0, 0]),
    ]
    for count, (step, expected) in enumerate(steps, start=1):
        assert step() is t
        assert t.tolist() == expected
        assert t._version[0] == count


def test_views_and_detach_share_the_version_counter():
    base = mg.tensor([[1.0, 2.0], [3.0, 4.0]])
    view = base[0]
    alias = base.detach()
    reshaped = base.reshape(4)
    view.mul_(10)
    assert base.tolist() == [[10, 20], [3, 4]]
    assert base._version[0] == alias._version[0] == reshaped._version[0] == 1


def test_inplace_on_a_tensor_not_saved_is_fine():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    c = mg.tensor([3.0, 4.0])
    y = (x + c).sum()  # Add saves nothing
    c.add_(1)
    y.backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_random_inplace_initializers():
    mg.manual_seed(0)
    t = mg.zeros(1000)
    t.uniform_(-1, 1)
    assert -1 <= t.numpy().min() and t.numpy().max() < 1 and t._version[0] == 1
    t.normal_(2.0, 0.5)
    assert abs(t.numpy().mean() - 2.0) < 0.1 and abs(t.numpy().std() - 0.5) < 0.1


# ----------------------------------------------------------------------------- conversions


def test_conversions():
    t = mg.tensor([[1.5, 2.0]])
    assert isinstance(t.numpy(), np.ndarray)
    assert t.tolist() == [[1.5, 2.0]]
    assert mg.tensor([2.5]).item() == 2.5 and isinstance(mg.tensor(3).item(), int)
    assert float(mg.tensor(1.5)) == 1.5 and int(mg.tensor(7)) == 7
    assert bool(mg.tensor(True)) and not bool(mg.tensor(0.0))
    np.testing.assert_array_equal(np.asarray(t), [[1.5, 2.0]])
    assert [10, 20, 30][mg.tensor(1)] == 20  # __index__ on an int tensor
    with pytest.raises(TypeError, match="integer"):
        [10, 20][mg.tensor(1.0)]


def test_numpy_operand_on_the_left_defers_to_tensor():
    t = mg.tensor([1.0, 2.0])
    result = np.array([2.0, 3.0], dtype=np.float32) * t
    assert isinstance(result, mg.Tensor) and result.tolist() == [2.0, 6.0]


def test_argmax_argmin():
    t = mg.tensor([[1.0, 5.0, 5.0], [7.0, 0.0, 7.0]])
    assert t.argmax().item() == 3
    assert t.argmax(1).tolist() == [1, 0]  # first of tied maxima, as in torch
    assert t.argmin(1, keepdim=True).tolist() == [[0], [1]]
    assert t.argmax(1).dtype is mg.int64
