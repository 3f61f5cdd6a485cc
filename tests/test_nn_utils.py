"""nn.utils' clip_grad_value_, parameters_to_vector and vector_to_parameters: PyTorch's
results on the same parameters (clamping, concatenation and copying are exact), and clear
errors for bad arguments."""
import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn.utils import clip_grad_value_, parameters_to_vector, vector_to_parameters


def _arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape) for shape in ((3, 4), (4,), (2, 3, 2))]


def _parameters(lib, arrays):
    return [lib.nn.Parameter(lib.tensor(array)) for array in arrays]


def test_clip_grad_value_clamps_each_gradient_as_pytorch():
    torch = pytest.importorskip("torch")
    arrays = _arrays()
    grads = [array[::-1] * 2 for array in arrays]  # values on both sides of +-0.7
    ours, theirs = _parameters(mg, arrays), _parameters(torch, arrays)
    for params, lib in ((ours, mg), (theirs, torch)):
        for param, grad in zip(params[:2], grads):  # the last has no gradient: skipped
            param.grad = lib.tensor(grad.copy())
    clip_grad_value_(ours, 0.7)
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for mine, reference in zip(ours[:2], theirs[:2]):
        np.testing.assert_array_equal(mine.grad.numpy(), reference.grad.numpy())
    assert ours[2].grad is None
    assert 0 < np.sum(np.abs(ours[0].grad.numpy()) == 0.7) < ours[0].numel()  # some clipped


def test_clip_grad_value_takes_one_tensor_and_refuses_a_negative_bound():
    param = nn.Parameter(mg.zeros(3))
    param.grad = mg.tensor([-2.0, 0.5, 3.0])
    clip_grad_value_(param, 1.0)
    np.testing.assert_array_equal(param.grad.numpy(), [-1.0, 0.5, 1.0])
    with pytest.raises(ValueError, match=r"clip_grad_value_: clip_value must be .* got -1.0"):
        clip_grad_value_(param, -1.0)


def test_parameters_to_vector_is_pytorchs_and_passes_gradients_back():
    torch = pytest.importorskip("torch")
    arrays = _arrays()
    ours, theirs = _parameters(mg, arrays), _parameters(torch, arrays)
    vector = parameters_to_vector(ours)
    reference = torch.nn.utils.parameters_to_vector(theirs)
    np.testing.assert_array_equal(vector.numpy(), reference.detach().numpy())
    weights = np.random.default_rng(1).standard_normal(vector.shape[0])
    (vector * mg.tensor(weights)).sum().backward()
    (reference * torch.tensor(weights)).sum().backward()
    for mine, theirs_param in zip(ours, theirs):
        np.testing.assert_array_equal(mine.grad.numpy(), theirs_param.grad.numpy())


def test_vector_to_parameters_copies_slices_in_order_as_pytorch():
    torch = pytest.importorskip("torch")
    arrays = _arrays()
    ours, theirs = _parameters(mg, arrays), _parameters(torch, arrays)
    before = list(ours)
    values = np.arange(sum(a.size for a in arrays), dtype=np.float64) * 0.5
    vector_to_parameters(mg.tensor(values), ours)
    torch.nn.utils.vector_to_parameters(torch.tensor(values), theirs)
    for mine, reference, kept in zip(ours, theirs, before):
        assert mine is kept and mine.requires_grad and mine.grad_fn is None
        np.testing.assert_array_equal(mine.numpy(), reference.detach().numpy())


def test_vector_to_parameters_refuses_a_vector_that_does_not_fit():
    params = _parameters(mg, _arrays())
    with pytest.raises(TypeError, match="vector_to_parameters: expected a Tensor as vec, but "
                                        "got: ndarray"):
        vector_to_parameters(np.zeros(28), params)
    for shape in ((27,), (29,), (2, 14)):
        with pytest.raises(RuntimeError, match=r"a 1-D vec of 28 elements .* got shape "
                                               + rf"\({shape[0]},"):
            vector_to_parameters(mg.zeros(*shape), params)
