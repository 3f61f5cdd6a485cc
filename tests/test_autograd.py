"""Engine behaviour: accumulation, retain_graph, deep graphs, grad mode, detach, hooks,
retain_grad, mg.autograd.grad, gradient aliasing and leaks."""
from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest
from helpers import make_tensor

import minigrad as mg
from minigrad.autograd import Function

pytestmark = pytest.mark.device  # tensors via make_tensor follow --device


def vector(values, requires_grad=True):
    return make_tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# ----------------------------------------------------------------------------- backward


def test_leaf_grad_accumulates_over_two_backward_calls():
    x = vector([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 7, 9])
    assert isinstance(x.grad, mg.Tensor)
    assert not x.grad.requires_grad


def test_retain_graph_allows_second_backward_and_accumulates():
    x = vector([0.5, -1.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    expected = np.exp([0.5, -1.0]) * (1 + np.array([0.5, -1.0]))
    np.testing.assert_allclose(first, expected)
    np.testing.assert_allclose(x.grad.numpy(), 2 * expected)


def test_second_backward_through_freed_graph_asks_for_retain_graph():
    x = vector([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True") as info:
        y.backward()
    # named after the node that dropped what it saved, before any gradient is computed
    assert str(info.value).startswith("MulBackward0: ")
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_a_graph_whose_nodes_saved_nothing_runs_again():
    # as in PyTorch: backward drops what nodes saved; Add and Sum saved nothing
    x = vector([1.0, 2.0])
    y = (x + 1.0).sum()
    y.backward()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_backward_with_explicit_gradient():
    x = vector([1.0, 2.0, 3.0])
    y = x * x
    y.backward(vector([1.0, 0.0, -1.0], requires_grad=False))
    np.testing.assert_allclose(x.grad.numpy(), [2, 0, -6])


def test_deep_chain_of_20000_ops_backpropagates_without_recursion():
    x = vector([0.5])
    y = x
    for _ in range(20_000):
        y = y * 1.0001
    limit = sys.getrecursionlimit()
    assert 20_000 > limit  # a recursive walk would fail here
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0001**20_000], rtol=1e-9)


def test_diamond_graph_sums_both_paths():
    x = vector([2.0])
    a = x * 3.0
    y = (a * a + a.exp()).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * 6.0 * 3 + 3 * np.exp(6.0)])


def test_broadcast_gradient_is_summed_back_to_input_shape():
    x = make_tensor(np.ones((3, 1)), requires_grad=True)
    b = make_tensor(np.arange(4.0), requires_grad=True)
    (x * b).backward(make_tensor(np.ones((3, 4))))
    assert x.grad.shape == (3, 1) and b.grad.shape == (4,)
    np.testing.assert_allclose(x.grad.numpy(), [[6.0]] * 3)
    np.testing.assert_allclose(b.grad.numpy(), [3.0] * 4)


# ----------------------------------------------------------------------------- grad mode


def _assert_no_graph(t):
    assert t.grad_fn is None
    assert not t.requires_grad


def test_no_grad_context_and_decorator_build_no_graph():
    x = vector([1.0, 2.0])
    with mg.no_grad():
        _assert_no_graph(x * 2 + x.exp())
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled()

    @mg.no_grad()
    def double(t):
        return t * 2

    _assert_no_graph(double(x))
    assert (x * 2).grad_fn is not None


def test_enable_grad_inside_no_grad_and_as_decorator():
    x = vector([1.0])

    @mg.enable_grad()
    def square(t):
        return t * t

    with mg.no_grad():
        with mg.enable_grad():
            assert (x * x).grad_fn is not None
        _assert_no_graph(x * x)
        assert square(x).grad_fn is not None


def test_set_grad_enabled_context_and_decorator():
    x = vector([1.0])
    with mg.set_grad_enabled(False):
        _assert_no_graph(x * x)
        with mg.set_grad_enabled(True):
            assert (x * x).requires_grad
    assert mg.is_grad_enabled()

    @mg.set_grad_enabled(False)
    def square(t):
        return t * t

    _assert_no_graph(square(x))
    assert mg.is_grad_enabled()


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with mg.no_grad():
            raise ValueError("boom")
    assert mg.is_grad_enabled()


def test_no_graph_when_no_input_requires_grad():
    x = vector([1.0, 2.0], requires_grad=False)
    _assert_no_graph(x.exp() * x)


# ----------------------------------------------------------------------------- detach


def test_detach_cuts_the_graph_and_shares_memory():
    x = vector([1.0, 2.0])
    y = x * 2
    d = y.detach()
    _assert_no_graph(d)
    assert d.array is y.array
    (d * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])  # d is a constant


def test_requires_grad_toggle():
    x = vector([1.0, 2.0], requires_grad=False)
    assert x.requires_grad_() is x
    assert x.requires_grad and x.is_leaf
    x.requires_grad_(False)
    assert not x.requires_grad
    x.requires_grad = True
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_retain_grad_on_non_leaf():
    x = vector([1.0, 2.0])
    y = x * 3
    z = y * y
    y.retain_grad()
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])
    assert (x * 2).grad is None  # non-leaves do not keep grads unless asked


# ----------------------------------------------------------------------------- hooks


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


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        vector([1.0], requires_grad=False).register_hook(lambda g: g)


# ----------------------------------------------------------------------------- autograd.grad


def test_autograd_grad_returns_without_touching_dot_grad():
    x = vector([1.0, 2.0])
    w = vector([3.0, -1.0])
    y = x * w
    gx, gw = mg.autograd.grad(y, [x, w], grad_outputs=vector([1.0, 2.0], False))
    np.testing.assert_allclose(gx.numpy(), [3.0, -2.0])
    np.testing.assert_allclose(gw.numpy(), [1.0, 4.0])
    assert x.grad is None and w.grad is None


def test_autograd_grad_of_non_leaf_input():
    x = vector([1.0, 2.0])
    h = x * x
    (gh,) = mg.autograd.grad((h * 5).sum(), [h])
    np.testing.assert_allclose(gh.numpy(), [5.0, 5.0])
    assert h.grad is None


def test_autograd_grad_allow_unused():
    x, unused = vector([1.0]), vector([2.0])
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        mg.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = mg.autograd.grad(y, [x, unused], allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), [2.0])
    assert gu is None


def test_autograd_grad_create_graph_gives_second_derivative():
    x = vector([0.3, -0.7])
    y = (x * x * x).sum()
    (g,) = mg.autograd.grad(y, [x], create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    (h,) = mg.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(h.numpy(), 6 * x.numpy())
    (gh,) = mg.autograd.grad((x.tanh() * 2).sum(), [x])
    assert not gh.requires_grad  # no create_graph: a constant


def test_autograd_grad_multiple_outputs():
    x = vector([1.0, 2.0])
    a, b = x * 2, x * x
    (g,) = mg.autograd.grad([a.sum(), b.sum()], [x])
    np.testing.assert_allclose(g.numpy(), [4.0, 6.0])


# ----------------------------------------------------------------------------- aliasing


def test_two_leaves_receiving_the_same_gradient_do_not_share_an_array():
    x, y = vector([1.0, 2.0]), vector([3.0, 4.0])
    (x + y).sum().backward()
    assert x.grad.array is not y.grad.array
    with mg.no_grad():
        x.grad.mul_(2)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 1.0])


def test_leaf_grad_does_not_alias_the_upstream_gradient():
    x = vector([1.0, 2.0])
    upstream = vector([5.0, 6.0], requires_grad=False)
    (x + 0.0).backward(upstream)
    with mg.no_grad():
        x.grad.add_(1)
    np.testing.assert_allclose(upstream.numpy(), [5.0, 6.0])


def test_grad_of_leaf_used_twice_is_not_aliased_with_intermediate():
    x = vector([1.0, 2.0])
    y = x + x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


# ----------------------------------------------------------------------------- leaks


def _live_counts() -> tuple[int, int]:
    gc.collect()
    objects = gc.get_objects()
    # type(), not isinstance(): isinstance would touch dead weak proxies and raise
    functions = sum(1 for o in objects if issubclass(type(o), Function))
    tensors = sum(1 for o in objects if issubclass(type(o), mg.Tensor))
    return functions, tensors


def _train(steps: int, params, inputs, targets) -> float:
    w1, b1, w2 = params
    loss_value = 0.0
    for _ in range(steps):
        hidden = (inputs @ w1 + b1).tanh()
        loss = ((hidden @ w2 - targets) ** 2).mean()
        loss.backward()
        with mg.no_grad():
            for p in params:
                p.sub_(p.grad * 0.1)
                p.grad = None
        loss_value = loss.item()
    return loss_value


def test_training_loop_leaves_no_live_nodes_or_tensors():
    rng = np.random.default_rng(0)
    params = [make_tensor(rng.standard_normal(s) * 0.5, requires_grad=True)
              for s in [(3, 8), (8,), (8, 1)]]
    inputs = make_tensor(rng.standard_normal((16, 3)))
    targets = make_tensor(rng.standard_normal((16, 1)))
    first = _train(1, params, inputs, targets)  # warm caches before counting
    before = _live_counts()
    last = _train(100, params, inputs, targets)
    after = _live_counts()
    assert last < first  # the loop does train
    assert after[0] == before[0], f"live Function nodes: {before[0]} -> {after[0]}"
    assert after[1] == before[1], f"live tensors: {before[1]} -> {after[1]}"


def test_graph_is_freed_by_reference_counting_alone():
    """Nodes must not form reference cycles: dropping the output frees the graph at once,
    without waiting for the cycle collector."""
    x = vector([1.0, 2.0])
    gc.disable()
    try:
        y = (x.exp() * x).softmax(0).sum()
        node = weakref.ref(y.grad_fn)
        y.backward()
        del y
        assert node() is None
    finally:
        gc.enable()


def test_in_place_change_of_a_gathered_copy_leaves_the_source_usable():
    # integer-array indexing copies, so changing the copy must not look like a change of x
    x = mg.tensor([1.0, 2.0, 3.0])
    w = mg.tensor([0.5, 0.5, 0.5], requires_grad=True)
    y = (w * x).sum()
    picked = x[mg.tensor([0, 0, 2])]
    picked.add_(1.0)
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.numpy(), [1.0, 2.0, 3.0])


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


def test_post_accumulate_hook_only_on_leaves_that_require_grad():
    x = vector([1.0])
    with pytest.raises(RuntimeError, match="only leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="does not require grad"):
        vector([1.0], requires_grad=False).register_post_accumulate_grad_hook(lambda t: None)


def test_second_derivative_of_ops_that_save_their_output_on_0d_tensors():
    # NumPy returns scalars from 0-d arithmetic; the saved output must stay the output
    for name, second in (("tanh", lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)),
                         ("exp", np.exp), ("sqrt", lambda v: -0.25 * v ** -1.5)):
        x = mg.tensor(0.7, dtype=mg.float64, requires_grad=True)
        (g,) = mg.autograd.grad(getattr(x, name)(), [x], create_graph=True)
        assert g.grad_fn is not None, name
        g.backward()
        np.testing.assert_allclose(x.grad.numpy(), second(0.7), rtol=1e-12, err_msg=name)
