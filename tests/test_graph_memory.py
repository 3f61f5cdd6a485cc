"""After backward() a graph holds no arrays: a loop that keeps its losses keeps no
activations alive (the benchmark benchmarks/bench_graph_memory.py measures the RSS), a
training loop leaves no live nodes or tensors, and a graph is freed by reference counting
alone."""
import gc
import weakref

import numpy as np
import pytest
from helpers import make_tensor, vector

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from minigrad.autograd import Function


def _forward_arrays(loss) -> list:
    """Weak references to every array the graph behind `loss` holds: saved arrays (of
    inputs, outputs or computed in forward) and anything else its nodes stored."""
    refs, stack, seen = [], [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        held = [saved.tensor.array if saved.tensor is not None else saved.array
                for saved in getattr(node, "_saved", ())]
        held += [v for v in vars(node).values() if isinstance(v, np.ndarray)]
        refs += [weakref.ref(a) for a in held if isinstance(a, np.ndarray)]
        stack += [next_node for next_node, _ in node.next_functions]
    return refs


def _model_loss(model, x, target):
    hidden = F.layer_norm(model(x), (10,))
    return F.cross_entropy(hidden.softmax(-1).log(), target, label_smoothing=0.1)


def test_backward_releases_every_array_of_the_graph():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 32), nn.GELU(), nn.Dropout(0.1), nn.Linear(32, 10))
    x = mg.randn(16, 6)
    target = mg.randint(0, 10, (16,))
    loss = _model_loss(model, x, target)
    refs = _forward_arrays(loss)
    assert len(refs) > 10
    loss.backward()
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    # what may stay: the loss's own value and arrays the caller still holds (x, weights)
    kept = {id(loss.array), id(x.array), *(id(p.array) for p in model.parameters())}
    assert [a.shape for a in alive if id(a) not in kept] == []


def test_kept_losses_keep_no_activations():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = mg.optim.Adam(model.parameters(), lr=1e-3)
    losses, first_step_arrays = [], None
    for step in range(3):
        optimizer.zero_grad()
        loss = _model_loss(model, mg.randn(128, 64), mg.randint(0, 10, (128,)))
        if step == 0:
            first_step_arrays = _forward_arrays(loss)
        loss.backward()
        optimizer.step()
        losses.append(loss)  # the pattern that used to keep every step's graph alive
    gc.collect()
    weights = {id(p.array) for p in model.parameters()}  # updated in place, still the model's
    alive = [r() for r in first_step_arrays if r() is not None]
    assert [a.shape for a in alive if a.size > 1 and id(a) not in weights] == []


def test_retain_graph_keeps_the_arrays_until_the_last_backward():
    x = mg.randn(4, 3, requires_grad=True)
    loss = (x.exp() * 2).sum()
    refs = _forward_arrays(loss)
    loss.backward(retain_graph=True)
    gc.collect()
    assert sum(r() is not None for r in refs) >= 2
    loss.backward()
    gc.collect()
    assert all(r() is None or r() is loss.array for r in refs)


def test_an_intermediate_no_node_saved_is_freed_before_backward():
    """Sum saves nothing of its input: once the caller drops `hidden`, its array is gone
    although the graph through it is alive (a node keeps edges, not its inputs)."""
    x = mg.randn(4, 4, requires_grad=True)
    hidden = (x * 2).tanh() * 3  # the Mul by 3 saves its inputs, not its output
    loss = hidden.sum()
    alive = weakref.ref(hidden.array)
    del hidden
    gc.collect()
    assert alive() is None
    loss.backward()
    assert x.grad.shape == (4, 4)


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


@pytest.mark.device
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


@pytest.mark.device
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
