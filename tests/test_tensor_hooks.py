"""Tensor hooks (Tensor.register_hook) on leaves and non-leaves, and retain_grad: a hook
may replace a gradient's values, never its shape, dtype or device (PyTorch raises too)."""
import numpy as np
import pytest

import minigrad as mg


def _leaf():
    return mg.tensor([1.0, 2.0, 3.0], requires_grad=True)


def test_a_hook_replaces_the_gradient_of_a_leaf_and_of_a_non_leaf():
    x = _leaf()
    x.register_hook(lambda g: g * 10)
    h = x * 2
    h.register_hook(lambda g: g + 1)
    h.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [40.0, 40.0, 40.0])  # (1 + 1) * 2 * 10


@pytest.mark.parametrize("where", ["leaf", "non-leaf", "non-leaf with retain_grad"])
@pytest.mark.parametrize("result_shape", [(5,), (2, 3), ()])
def test_a_hook_that_changes_the_size_raises_naming_both_shapes(where, result_shape):
    x = _leaf()
    target = x if where == "leaf" else x * 2
    if where == "non-leaf with retain_grad":
        target.retain_grad()

    def resize(grad):
        return mg.ones(*result_shape)

    target.register_hook(resize)
    with pytest.raises(RuntimeError) as info:
        (target * 1.0).sum().backward()
    message = str(info.value)
    assert "hook 'resize' has changed the size of value" in message
    assert "(3,)" in message and str(result_shape) in message
    assert x.grad is None and target.grad is None  # nothing was accumulated


def test_a_hook_that_changes_the_dtype_raises():
    x = _leaf()
    x.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match="changed the dtype of value.*float64"):
        (x * 2).sum().backward()
    assert x.grad is None


def test_a_hook_must_return_a_tensor_or_none():
    x = _leaf()
    x.register_hook(lambda g: g.numpy())
    with pytest.raises(TypeError, match="returned a ndarray; expected a tensor"):
        (x * 2).sum().backward()


def test_a_hook_that_changes_the_device_raises():
    if not mg.cuda.is_available():
        pytest.skip("needs a GPU (or the CuPy stand-in, MINIGRAD_FAKE_GPU=1)")
    x = _leaf()
    x.register_hook(lambda g: g.to("gpu"))
    with pytest.raises(RuntimeError, match="changed the device of value"):
        (x * 2).sum().backward()


def test_retain_grad_keeps_the_gradient_after_the_hooks():
    x = _leaf()
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 3)
    h.sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0, 6.0])


def test_retained_gradient_is_a_copy_not_the_leafs_memory():
    x = _leaf()
    h = x.reshape(1, 3)  # a view: its backward sends a view of the gradient on to x
    h.retain_grad()
    h.backward(mg.ones(1, 3))
    x.grad.add_(1.0)
    np.testing.assert_array_equal(h.grad.numpy(), [[1.0, 1.0, 1.0]])


def test_hooks_run_under_autograd_grad_without_touching_grad():
    x = _leaf()
    x.register_hook(lambda g: g * 10)
    (gx,) = mg.autograd.grad((x * x).sum(), x)
    np.testing.assert_array_equal(gx.numpy(), [20.0, 40.0, 60.0])
    assert x.grad is None


def test_a_removed_hook_no_longer_runs():
    x = _leaf()
    handle = x.register_hook(lambda g: g * 10)
    handle.remove()
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
