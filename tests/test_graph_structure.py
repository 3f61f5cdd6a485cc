"""The backward graph has PyTorch's shape: nodes linked by next_functions, AccumulateGrad
nodes at the leaves, and one walk that runs both kinds (node names: test_node_names.py)."""
import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd.accumulate_grad import AccumulateGrad
from minigrad.autograd.function import Function


def test_next_functions_lead_to_producers_accumulators_and_none():
    w = mg.randn(3, 2, requires_grad=True)
    x = mg.randn(4, 3)  # needs no gradient
    h = x @ w
    y = h.tanh()
    assert w.grad_fn is None and w.is_leaf
    assert y.grad_fn.name == "TanhBackward0"
    assert y.grad_fn.next_functions == ((h.grad_fn, 0),)
    (none, _), (accumulate, index) = h.grad_fn.next_functions
    assert none is None and index == 0
    assert isinstance(accumulate, AccumulateGrad) and accumulate.variable is w
    assert accumulate.name == "AccumulateGrad" and accumulate.next_functions == ()


def test_one_accumulate_grad_per_leaf_while_a_graph_uses_it():
    w = mg.randn(3, requires_grad=True)
    a, b = w * 2, w.exp()
    assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]


def test_a_node_holds_no_input_it_did_not_save():
    x = mg.randn(5, 5, requires_grad=True)
    hidden = x.tanh()
    out = hidden + 1.0  # add saves nothing
    assert out.grad_fn._saved == ()
    assert not [v for v in vars(out.grad_fn).values() if isinstance(v, np.ndarray)]


def test_saved_tensors_come_back_as_the_inputs_and_the_output():
    x = mg.randn(4, requires_grad=True)
    y = x.exp()  # exp saves its output
    (saved_y,) = y.grad_fn.saved
    assert saved_y.array is y.array and saved_y.grad_fn is y.grad_fn  # y's place in the graph
    with mg.no_grad():  # as in a backward without create_graph: a constant
        (saved_y,) = y.grad_fn.saved
    assert saved_y.array is y.array and saved_y.grad_fn is None
    z = x * x
    assert all(t is x for t in z.grad_fn.saved)


def test_backward_releases_saved_tensors_and_keeps_the_edges():
    x = mg.randn(4, requires_grad=True)
    y = (x * x).sum()
    mul = y.grad_fn.next_functions[0][0]
    y.backward()
    assert mul._saved == ()
    assert mul.next_functions[0][0].variable is x  # the graph can still be inspected


def test_an_add_gives_each_leaf_its_own_gradient_memory():
    a = mg.randn(3, requires_grad=True)
    b = mg.randn(3, requires_grad=True)
    gradient = mg.ones(3)
    (a + b).backward(gradient)
    assert not np.shares_memory(a.grad.array, b.grad.array)
    assert not np.shares_memory(a.grad.array, gradient.array)
    a.grad.add_(1.0)
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0, 1.0])


def test_a_leaf_gradient_is_accumulated_as_soon_as_its_paths_are_done():
    """AccumulateGrad runs like any node, once every path into it has delivered: the
    leaf next to the loss has its .grad while the far end of the graph still runs."""
    order = []

    class Record(Function):
        def forward(self, x):
            return x.copy()

        def backward(self, grad):
            order.append("far node")
            return grad

    near = mg.randn(3, requires_grad=True)
    far = mg.randn(3, requires_grad=True)
    near.register_post_accumulate_grad_hook(lambda leaf: order.append("near .grad"))
    loss = (Record.apply(far).tanh() * near).sum()
    loss.backward()
    assert order == ["near .grad", "far node"]


def test_grad_runs_only_the_nodes_that_lead_to_its_inputs():
    ran = []

    class Record(Function):
        def forward(self, x):
            return x.copy()

        def backward(self, grad):
            ran.append(True)
            return grad

    x = mg.randn(3, requires_grad=True)
    side = mg.randn(3, requires_grad=True)
    hidden = x.exp()
    loss = (hidden * 2).sum() + Record.apply(side).sum()
    (g_hidden,) = mg.autograd.grad(loss, hidden)
    np.testing.assert_array_equal(g_hidden.numpy(), [2.0, 2.0, 2.0])
    assert ran == [] and x.grad is None and side.grad is None


def test_grad_of_an_output_that_needs_no_gradient_says_so():
    x = mg.randn(3, requires_grad=True)
    with mg.no_grad():
        y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="element 0 of the outputs .* does not require grad"):
        mg.autograd.grad(y, x)


def test_a_rule_that_returns_a_gradient_of_another_shape_is_refused():
    """Same size, other shape: the engine must not quietly reshape it into place."""

    class Transposed(Function):
        def forward(self, x):
            return x * 1.0

        def backward(self, grad):
            return grad.transpose(0, 1)  # (3, 2) for a (2, 3) input

    x = mg.randn(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"TransposedBackward0 returned an invalid gradient"):
        Transposed.apply(x).sum().backward()
