"""Engine behaviour: accumulation, retain_graph, deep graphs, every path of a graph summed,
detach, retain_grad, mg.autograd.grad and gradient aliasing. (Grad mode:
test_grad_mode_threads.py; hooks: test_tensor_hooks.py; freed graphs:
test_graph_memory.py.)"""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, arrays, check_grad, layouts, make_tensor, vector
from hypothesis import given
from hypothesis import strategies as st
from op_cases import leaf

import minigrad as mg

pytestmark = pytest.mark.device  # tensors via make_tensor follow --device


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


@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_composite_attention_like(data, layout):
    """Several ops chained, as in attention: the engine sums every path correctly."""
    q = leaf(data.draw(arrays((2, 3, 2))), layout)
    k = leaf(data.draw(arrays((2, 3, 2))))
    mask = make_tensor(np.triu(np.ones((3, 3), dtype=bool), 1))

    def attention(q_, k_):
        scores = (q_ @ k_.transpose(-1, -2)) * (1 / math.sqrt(2))
        weights = scores.masked_fill(mask, float("-inf")).softmax(-1)
        return weights @ k_ + q_.var(-1, keepdim=True)

    check_grad(attention, q, k)


# ----------------------------------------------------------------------------- detach


def test_detach_cuts_the_graph_and_shares_memory():
    x = vector([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert d.grad_fn is None and not d.requires_grad
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


# ----------------------------------------------------------------------------- autograd.grad


def test_autograd_grad_returns_without_touching_dot_grad():
    x = vector([1.0, 2.0])
    w = vector([3.0, -1.0])
    y = x * w
    gx, gw = mg.autograd.grad(y, [x, w], grad_outputs=vector([1.0, 2.0], False))
    np.testing.assert_allclose(gx.numpy(), [3.0, -2.0])
    np.testing.assert_allclose(gw.numpy(), [1.0, 4.0])
    assert x.grad is None and w.grad is None


def test_will_execute_names_the_nodes_a_running_backward_has_still_to_run():
    from minigrad.autograd.engine import will_execute

    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    z = y * 3
    branch = x.sin()  # not on z's path
    seen = []
    z.register_hook(lambda g: seen.append((will_execute(z.grad_fn), will_execute(y.grad_fn),
                                           will_execute(branch.grad_fn))))
    y.register_hook(lambda g: seen.append((will_execute(z.grad_fn), will_execute(y.grad_fn),
                                           will_execute(branch.grad_fn))))
    z.sum().backward(retain_graph=True)
    # a tensor's hook runs as its node runs: z's sees y's still to run, y's sees none
    assert seen == [(False, True, False), (False, False, False)]
    assert not will_execute(y.grad_fn)  # outside a backward
    seen.clear()
    mg.autograd.grad(z.sum(), [y])  # grad() stops at y: y's node does not run
    assert seen == [(False, False, False), (False, False, False)]


def test_autograd_grad_of_non_leaf_input():
    x = vector([1.0, 2.0])
    h = x * x
    (gh,) = mg.autograd.grad((h * 5).sum(), [h])
    np.testing.assert_allclose(gh.numpy(), [5.0, 5.0])
    assert h.grad is None


def test_autograd_grad_leaves_the_graph_beyond_its_inputs_for_a_later_backward():
    x = vector([1.0, 2.0])
    h = x.exp()
    (gh,) = mg.autograd.grad((h * h).sum(), [h])  # frees the graph up to h, not before it
    np.testing.assert_allclose(gh.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
    (h * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp([1.0, 2.0]), rtol=1e-6)


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



def test_second_derivative_of_ops_that_save_their_output_on_0d_tensors():
    # NumPy returns scalars from 0-d arithmetic; the saved output must stay the output
    for name, second in (("tanh", lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)),
                         ("exp", np.exp), ("sqrt", lambda v: -0.25 * v ** -1.5)):
        x = mg.tensor(0.7, dtype=mg.float64, requires_grad=True)
        (g,) = mg.autograd.grad(getattr(x, name)(), [x], create_graph=True)
        assert g.grad_fn is not None, name
        g.backward()
        np.testing.assert_allclose(x.grad.numpy(), second(0.7), rtol=1e-12, err_msg=name)
