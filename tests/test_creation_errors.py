"""Creation functions and layers reject bad sizes as PyTorch does, naming the function and
the argument: a float or bool size is a TypeError (never truncated), a negative one a
ValueError, ragged data a ValueError saying where. Integer-like sizes still work."""
from __future__ import annotations

import re

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def raises(exception, *fragments):
    """pytest.raises that also checks each fragment appears in the message."""
    pattern = "(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in fragments)
    return pytest.raises(exception, match=pattern)


_SIZED = {  # name -> call with a size
    "zeros": lambda *size: mg.zeros(*size),
    "ones": lambda *size: mg.ones(*size),
    "empty": lambda *size: mg.empty(*size),
    "rand": lambda *size: mg.rand(*size),
    "randn": lambda *size: mg.randn(*size),
    "full": lambda *size: mg.full(size, 1.0),
    "randint": lambda *size: mg.randint(0, 5, size),
}


@pytest.mark.parametrize("name", _SIZED)
@pytest.mark.parametrize("size, exception, fragment", [
    ((2.5,), TypeError, "got 2.5 of type float"),
    ((2, 3.0), TypeError, "got 3.0 of type float"),
    ((True, 2), TypeError, "got the bool True"),
    (("2",), TypeError, "got '2' of type str"),
    ((None,), TypeError, "got None"),
    ((-1, 3), ValueError, "must be non-negative, got -1"),
    ((2, -3), ValueError, "must be non-negative, got -3"),
])
def test_bad_sizes_name_the_function_and_the_size(name, size, exception, fragment):
    with raises(exception, f"{name}: size", fragment):
        _SIZED[name](*size)


@pytest.mark.parametrize("name", _SIZED)
def test_integer_like_and_empty_sizes_are_accepted(name):
    assert _SIZED[name](np.int64(2), mg.tensor(3)).shape == (2, 3)
    assert _SIZED[name](0, 4).shape == (0, 4)
    if name not in ("full", "randint"):
        assert _SIZED[name]((2, 1)).shape == _SIZED[name]([2, 1]).shape == (2, 1)
        assert _SIZED[name]().shape == ()


@pytest.mark.parametrize("data, exception, fragments", [
    ([[1, 2], [3]], ValueError, ("tensor:", "length 2 at dim 1 (got 1)", "data[1]")),
    ([[1, 2], 3], ValueError, ("tensor:", "sequence of length 2 at dim 1", "got a int at data[1]")),
    ([1, [2]], ValueError, ("tensor:", "expected a number at dim 1", "data[1]")),
    ([[[1], [2]], [[3], [4, 5]]], ValueError, ("length 1 at dim 2 (got 2)", "data[1][1]")),
    ([1, "a"], TypeError, ("tensor:", "data[1], a str")),
    ([1.0, None], TypeError, ("tensor:", "data[1], a NoneType")),
    ({"a": 1}, TypeError, ("tensor:", "data, a dict")),
    ([1, 2j], TypeError, ("tensor:", "data[1], a complex")),
    ([np.zeros(2), np.zeros(3)], ValueError, ("expected shape (2,) at dim 1", "data[1]")),
])
def test_tensor_says_where_data_is_ragged_or_not_numbers(data, exception, fragments):
    with raises(exception, *fragments):
        mg.tensor(data)


def test_tensor_refuses_data_deeper_than_a_tensor_can_be():
    data = 1
    for _ in range(100):
        data = [data]
    with raises(ValueError, "tensor:", "more than 64 levels"):
        mg.tensor(data)


def test_good_nested_data_still_converts():
    assert mg.tensor([[1, 2], [3, 4]]).shape == (2, 2)
    assert mg.tensor([np.zeros(2), np.ones(2)]).tolist() == [[0, 0], [1, 1]]
    assert mg.tensor([[]]).shape == (1, 0)
    assert mg.tensor([True, np.float32(2)]).dtype == mg.float32


@pytest.mark.parametrize("call, exception, fragments", [
    (lambda: mg.eye(2.5), TypeError, ("eye: n", "2.5")),
    (lambda: mg.eye(-1), ValueError, ("eye: n", "non-negative")),
    (lambda: mg.eye(2, 1.5), TypeError, ("eye: m", "1.5")),
    (lambda: mg.arange(0, 10, 0), ValueError, ("arange: step must be nonzero",)),
    (lambda: mg.arange(5, 0), ValueError, ("arange:", "start=5", "end=0", "step=1")),
    (lambda: mg.arange(0, 5, -1), ValueError, ("arange:", "step=-1")),
    (lambda: mg.arange(float("nan")), ValueError, ("arange: end must be finite",)),
    (lambda: mg.arange(0, float("inf")), ValueError, ("arange: end must be finite",)),
    (lambda: mg.arange("3"), TypeError, ("arange: end must be a real number",)),
    (lambda: mg.arange(True), TypeError, ("arange: end must be a real number",)),
    (lambda: mg.randint(0, 0, (2,)), RuntimeError, ("randint: expected low < high",)),
    (lambda: mg.randint(3, 1, (2,)), RuntimeError, ("low=3, high=1",)),
    (lambda: mg.randint(0, 2.5, (2,)), TypeError, ("randint: high must be an integer", "2.5")),
    (lambda: mg.randint(0.5, 2, (2,)), TypeError, ("randint: low must be an integer",)),
    (lambda: mg.rand(2, dtype=mg.int64), TypeError, ("rand: dtype must be a floating",)),
    (lambda: mg.randn(2, dtype=mg.bool), TypeError, ("randn: dtype must be a floating",)),
    (lambda: mg.zeros(2, dtype="float8"), TypeError, ("zeros: unknown dtype 'float8'",)),
    (lambda: mg.tensor([1], dtype="x"), TypeError, ("tensor: unknown dtype 'x'",)),
    (lambda: mg.full((2,), "a"), TypeError, ("full: fill_value must be a number", "'a'")),
    (lambda: mg.full((2,), None), TypeError, ("full: fill_value",)),
    (lambda: mg.zeros_like(np.zeros(2)), TypeError, ("zeros_like: expected a Tensor",)),
    (lambda: mg.ones_like([1.0]), TypeError, ("ones_like: expected a Tensor", "list")),
    (lambda: mg.empty_like(3), TypeError, ("empty_like: expected a Tensor",)),
    (lambda: mg.full_like(None, 1), TypeError, ("full_like: expected a Tensor",)),
])
def test_other_bad_arguments_name_the_function_and_the_argument(call, exception, fragments):
    with raises(exception, *fragments):
        call()


def test_valid_calls_match_pytorch_shapes_and_values():
    assert mg.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert mg.arange(0.0, 1.0, 0.25).dtype == mg.float32
    assert mg.arange(mg.tensor(3)).tolist() == [0, 1, 2]
    assert mg.arange(3, 3).shape == (0,)
    assert mg.eye(np.int64(2), 3).shape == (2, 3)
    assert mg.full((2,), np.True_).dtype == mg.bool
    assert mg.full((1,), mg.tensor(2.5)).tolist() == [2.5]
    assert mg.randint(np.int64(4), size=(3,)).shape == (3,)
    assert mg.empty_like(mg.zeros(2, 3, dtype=mg.float64)).dtype == mg.float64
    assert mg.full_like(mg.zeros(2), 7, requires_grad=True).requires_grad


@pytest.mark.parametrize("call, exception, fragments", [
    (lambda: nn.Linear(2.5, 3), TypeError, ("Linear: in_features", "2.5")),
    (lambda: nn.Linear(2, 3.0), TypeError, ("Linear: out_features", "3.0")),
    (lambda: nn.Linear(-1, 3), ValueError, ("Linear: in_features", "non-negative")),
    (lambda: nn.Linear(True, 3), TypeError, ("Linear: in_features", "bool")),
    (lambda: nn.Embedding(2.5, 3), TypeError, ("Embedding: num_embeddings", "2.5")),
    (lambda: nn.Embedding(10, -3), ValueError, ("Embedding: embedding_dim", "non-negative")),
    (lambda: nn.Embedding(10, 3, padding_idx=1.0), TypeError, ("Embedding: padding_idx",)),
    (lambda: nn.Embedding(10, 3, padding_idx=10), ValueError, ("Embedding: padding_idx 10",)),
    (lambda: nn.LayerNorm(2.5), TypeError, ("LayerNorm: normalized_shape", "2.5")),
    (lambda: nn.LayerNorm((4, -2)), ValueError, ("LayerNorm: normalized_shape", "-2")),
    (lambda: nn.LayerNorm(4, eps="small"), TypeError, ("LayerNorm: eps",)),
    (lambda: nn.LayerNorm(4, eps=-1e-5), ValueError, ("LayerNorm: eps must be non-negative",)),
    (lambda: nn.Dropout("0.5"), TypeError, ("Dropout: p must be a number",)),
    (lambda: nn.Dropout(1.5), ValueError, ("Dropout:", "[0, 1]", "1.5")),
    (lambda: nn.Conv2d(2.5, 3, 3), TypeError, ("Conv2d: in_channels", "2.5")),
    (lambda: nn.Conv1d(2, -3, 3), ValueError, ("Conv1d: out_channels", "non-negative")),
    (lambda: nn.Conv2d(4, 4, 3, groups=2.0), TypeError, ("Conv2d: groups", "2.0")),
    (lambda: nn.BatchNorm2d(3.0), TypeError, ("BatchNorm2d: num_features", "3.0")),
    (lambda: nn.GroupNorm(2, 4.0), TypeError, ("GroupNorm: num_channels", "4.0")),
    (lambda: nn.RMSNorm((4, 2.5)), TypeError, ("RMSNorm: normalized_shape", "2.5")),
])
def test_layers_reject_bad_size_arguments(call, exception, fragments):
    with raises(exception, *fragments):
        call()


def test_layers_accept_integer_like_sizes_like_pytorch():
    layer = nn.Linear(np.int64(3), mg.tensor(2))
    assert layer.weight.shape == (2, 3) and type(layer.in_features) is int
    with pytest.warns(UserWarning, match="zero-element tensors is a no-op"):
        assert nn.Linear(0, 2).weight.shape == (2, 0)
    assert nn.Embedding(np.int64(5), 2, padding_idx=np.int64(-1)).padding_idx == 4
    assert nn.LayerNorm([2, np.int64(3)]).normalized_shape == (2, 3)
