"""Tensor.data is PyTorch's: a tensor sharing memory, outside the graph, whose in-place
changes autograd does not track; Tensor.array is the backend array itself."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def test_data_is_a_tensor_sharing_memory_outside_the_graph():
    w = mg.randn(3, 2, requires_grad=True)
    data = w.data
    assert isinstance(data, mg.Tensor) and data is not w
    assert data.grad_fn is None and not data.requires_grad
    assert np.shares_memory(data.array, w.array)
    assert isinstance(w.array, np.ndarray)
    np.testing.assert_array_equal(data.numpy(), w.numpy())


def test_in_place_changes_through_data_show_in_the_tensor_untracked():
    w = mg.ones(3, requires_grad=True)
    y = (w * w).sum()  # saves w
    w.data.add_(1.0)  # as optimizers written for PyTorch do: not an autograd error
    np.testing.assert_array_equal(w.numpy(), [2.0, 2.0, 2.0])
    y.backward()  # uses the changed values, as PyTorch does with .data
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 4.0, 4.0])


def test_detach_is_tracked_where_data_is_not():
    w = mg.ones(3, requires_grad=True)
    y = (w * w).sum()
    w.detach().mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_copy_into_data_and_type_as_data():
    layer = nn.Linear(2, 2)
    new = mg.tensor([[1.0, 2.0], [3.0, 4.0]])
    layer.weight.data.copy_(new)
    np.testing.assert_array_equal(layer.weight.numpy(), new.numpy())
    assert layer.weight.requires_grad
    x = mg.tensor([1, 2]).type_as(layer.weight.data)
    assert x.dtype == mg.float32


def test_assigning_data_swaps_the_memory_and_keeps_the_tensor():
    w = mg.zeros(2, requires_grad=True)
    before = id(w)
    w.data = mg.tensor([5.0, 6.0, 7.0])
    assert id(w) == before and w.requires_grad and w.shape == (3,)
    np.testing.assert_array_equal(w.numpy(), [5.0, 6.0, 7.0])
    with pytest.raises(TypeError, match="Tensor.data must be set to a tensor"):
        w.data = np.zeros(3)
