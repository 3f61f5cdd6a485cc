"""After backward() a graph holds no arrays: a loop that keeps its losses keeps no
activations alive (the benchmark benchmarks/bench_graph_memory.py measures the RSS)."""
import gc
import weakref

import numpy as np

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn


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
