"""Tensor hooks (Tensor.register_hook) on leaves and non-leaves, and retain_grad: a hook
sees the gradient and may replace its values, never its shape, dtype or device (PyTorch
raises too); and post-accumulate-grad hooks, run on each leaf once its .grad is whole."""
import numpy as np
import pytest
from helpers import vector

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


@pytest.mark.device
def test_hook_on_leaf_sees_and_replaces_gradient():
    x = vector([1.0, 2.0])
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    (x * x).sum().backward()
    np.testing.assert_allclose(seen[0], [2.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 40.0])
    handle.remove()
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert len(seen) == 1


@pytest.mark.device
def test_hook_on_non_leaf_replaces_gradient_flowing_upstream():
    x = vector([1.0, 2.0])
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))  # observe only
    handle = y.register_hook(lambda g: g * 0 + 1)  # replace by ones
    (y * y).sum().backward()
    np.testing.assert_allclose(seen[0], [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    handle.remove()
    x.grad = None
    y = x * 3
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])


@pytest.mark.device
def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        vector([1.0], requires_grad=False).register_hook(lambda g: g)


@pytest.mark.device
def test_post_accumulate_hook_runs_once_per_leaf_before_backward_ends():
    x = vector([1.0, 2.0])
    w = vector([3.0, 4.0])
    order = []
    x.register_post_accumulate_grad_hook(lambda t: order.append(("x", t.grad.numpy().copy())))
    handle = w.register_post_accumulate_grad_hook(lambda t: order.append(("w", None)))
    # w is used twice (two paths), x once, deep in the graph: x's hook sees the full sum
    y = (x * w + w).exp()
    y.sum().backward()
    assert [name for name, _ in order].count("x") == 1
    assert [name for name, _ in order].count("w") == 1
    np.testing.assert_allclose(order[[n for n, _ in order].index("x")][1],
                               np.exp([6.0, 12.0]) * [3.0, 4.0], rtol=1e-6)
    handle.remove()
    (x * w).sum().backward()
    assert [name for name, _ in order].count("w") == 1


@pytest.mark.device
def test_post_accumulate_hook_fires_before_unrelated_work_finishes():
    # the first layer's weight is complete only at the end; the last layer's long before
    first = vector([0.5, -0.5])
    last = vector([2.0, 1.0])
    done = []
    first.register_post_accumulate_grad_hook(lambda t: done.append("first"))
    last.register_post_accumulate_grad_hook(lambda t: done.append("last"))
    h = first
    for _ in range(5):
        h = (h * 1.5).tanh()
    (h * last).sum().backward()
    assert done == ["last", "first"]


@pytest.mark.device
def test_post_accumulate_hook_only_on_leaves_that_require_grad():
    x = vector([1.0])
    with pytest.raises(RuntimeError, match="only leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="does not require grad"):
        vector([1.0], requires_grad=False).register_post_accumulate_grad_hook(lambda t: None)
