"""A CPU plan's buffers (minigrad/compile/buffers.py): the results of fused kernels and
matrix products used only inside the plan are written into one block of memory kept
between replays, arrays that never live together share it, nothing read after the plan
is ever in it, and the numbers are eager's bit for bit."""
import copy
import threading

import numpy as np
import pytest
from poisoned_blocks import poisoned_blocks

import minigrad as mg
from minigrad.compile import buffers
from minigrad.compile.buffers import ALIGNMENT, Blocks
from minigrad.kernels.matmul import matmul_twin

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _buffers_for_small_arrays(monkeypatch):
    """Small arrays get buffers here too, so that the tests stay small."""
    monkeypatch.setattr(buffers, "MIN_BYTES", 0)


def _floats(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shapes", [((5, 7), (7, 3)), ((2, 5, 7), (7, 3)),
                                    ((2, 3, 5, 7), (2, 3, 7, 4)), ((4, 7), (3, 7), "T")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_into_given_memory_equals_its_twin_bit_for_bit(shapes, dtype):
    a, b = _floats(*shapes[0], dtype=dtype), _floats(*shapes[1], dtype=dtype)
    if len(shapes) == 3:  # x @ w.T: a transposed (F-contiguous) right operand
        b = b.T
    expected = matmul_twin(a, b)
    out = np.full(expected.shape, np.nan, dtype)
    assert matmul_twin(a, b, out=out) is out
    np.testing.assert_array_equal(out, expected)


def _chain(x, w):
    """Two products, each followed by an elementwise run (fused): four results that die
    inside the call."""
    h = (x @ w) * 2.0 + 1.0
    h = (h @ w) * 0.5 - 1.0
    return h.sum(dim=1)


def test_arrays_that_never_live_together_share_the_block():
    x, w = mg.tensor(_floats(64, 32)), mg.tensor(_floats(32, 32))
    compiled = mg.compile(_chain, fullgraph=True)
    with mg.no_grad():
        compiled(x, w)
    (plan,) = compiled.plans()
    layout = plan.layout
    one = 64 * 32 * 4  # bytes of each result
    assert len(layout.slots) == 4, plan.describe()
    # each product's result lives until its elementwise run has read it: two at a time
    assert layout.size == 2 * one
    assert all(offset % ALIGNMENT == 0 for offset in layout.offsets)
    assert "buffers: 4 arrays in a block of 16 KiB" in plan.describe()


def test_results_read_after_the_call_are_never_in_the_block():
    def step(x, w):
        product = x @ w
        scaled = product * 2.0 + 1.0  # returned: made afresh at every call
        return scaled, product.reshape(-1)  # a view of the product: the product too

    w = mg.tensor(_floats(8, 8))
    compiled = mg.compile(step, fullgraph=True)
    with mg.no_grad():
        first = compiled(mg.tensor(_floats(4, 8)), w)
        kept = [t.numpy().copy() for t in first]
        second = compiled(mg.tensor(_floats(4, 8)), w)
    (plan,) = compiled.plans()
    assert plan.layout is None  # the plan has no buffer at all
    for tensor, value in zip(first, kept, strict=True):
        np.testing.assert_array_equal(tensor.numpy(), value)
    assert not np.shares_memory(first[0].numpy(), second[0].numpy())


def test_gradients_set_by_a_compiled_step_outlive_the_next_step():
    model = mg.nn.Sequential(mg.nn.Linear(16, 32), mg.nn.GELU(), mg.nn.Linear(32, 4))
    optimizer = mg.optim.SGD(model.parameters(), lr=0.1)

    def train_step(x, y):
        optimizer.zero_grad()
        loss = mg.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    compiled = mg.compile(train_step, fullgraph=True)
    batches = [(mg.tensor(_floats(8, 16)), mg.tensor(_floats(8, 4))) for _ in range(4)]
    compiled(*batches[0])
    compiled(*batches[1])
    grads = [p.grad for p in model.parameters()]
    values = [g.numpy().copy() for g in grads]
    compiled(*batches[2])
    for grad, value in zip(grads, values, strict=True):
        np.testing.assert_array_equal(grad.numpy(), value)
    assert compiled.plans()[0].layout.slots  # the step has buffers all the same


def _mlp_losses(compile_model: bool, steps: int = 4) -> list:
    mg.manual_seed(0)
    model = mg.nn.Sequential(mg.nn.Linear(24, 48), mg.nn.GELU(), mg.nn.Dropout(0.1),
                             mg.nn.Linear(48, 48), mg.nn.Tanh(), mg.nn.Linear(48, 5))
    optimizer = mg.optim.AdamW(model.parameters(), lr=1e-2)
    forward = mg.compile(model, fullgraph=True) if compile_model else model
    data = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = mg.tensor(data.standard_normal((3, 7, 24)).astype(np.float32))
        target = mg.tensor(data.integers(0, 5, 21))
        optimizer.zero_grad()
        loss = mg.nn.functional.cross_entropy(forward(x).reshape(-1, 5), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    if compile_model:  # the forward's and the backward's plans both write into a block
        (entry,) = [e for entries in forward._compiled_forward._plans.values() for e in entries]
        (backward,) = entry.backwards
        assert entry.plan.layout.slots and backward.plan.layout.slots
    return losses + [p.numpy().copy() for p in model.parameters()]


@pytest.fixture(name="poisoned_blocks")
def _poisoned_blocks_fixture():
    with poisoned_blocks():
        yield


def test_a_compiled_model_with_buffers_trains_as_eager_does_bit_for_bit(poisoned_blocks):
    compiled, eager = _mlp_losses(True), _mlp_losses(False)
    for a, b in zip(compiled, eager, strict=True):
        np.testing.assert_array_equal(a, b)


def test_two_threads_replaying_one_plan_at_once_get_their_own_memory(poisoned_blocks):
    x, w = mg.tensor(_floats(64, 32)), mg.tensor(_floats(32, 32))
    compiled = mg.compile(_chain, fullgraph=True)
    inputs = [mg.tensor(_floats(64, 32)) for _ in range(4)]
    with mg.no_grad():
        compiled(x, w)
        expected = [_chain(x_, w).numpy() for x_ in inputs]
    failures = []
    start = threading.Barrier(2)

    def replay_many(order):
        start.wait()
        with mg.no_grad():
            for _ in range(50):
                for i in order:
                    if not np.array_equal(compiled(inputs[i], w).numpy(), expected[i]):
                        failures.append(i)

    threads = [threading.Thread(target=replay_many, args=(order,))
               for order in ([0, 1, 2, 3], [3, 2, 1, 0])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_blocks_are_taken_one_replay_at_a_time_and_grow_to_the_largest_layout():
    blocks = Blocks()
    first = blocks.take(1000)
    second = blocks.take(1000)  # the first is in use: another
    assert first is not second and first.size == second.size == 1000
    assert first.memory.ctypes.data % ALIGNMENT == 0
    blocks.give_back(first)
    blocks.give_back(second)
    assert blocks.held() == 2000
    assert blocks.take(500).size == 1000  # a free block large enough: taken as it is
    larger = blocks.take(4000)  # the free one is too small: replaced by a new one
    assert larger.size == 4000 and blocks.held() == 0


def test_a_copied_compiled_module_replays_on_blocks_of_its_own():
    model = mg.nn.Sequential(mg.nn.Linear(4, 8), mg.nn.ReLU(), mg.nn.Linear(8, 2))
    compiled = mg.compile(model)
    x = mg.tensor(_floats(3, 4))
    compiled(x).sum().backward()
    copied = copy.deepcopy(compiled)
    assert copied._compiled_forward._blocks is not compiled._compiled_forward._blocks
    np.testing.assert_array_equal(copied(x).numpy(), compiled(x).numpy())


def test_two_forwards_alive_at_once_keep_their_own_arrays_for_backward(poisoned_blocks):
    """Two calls of a compiled model before either backward (two micro-batches, one
    backward each afterwards): the arrays each backward reads are its own call's."""
    def run(compile_model: bool):
        mg.manual_seed(0)
        model = mg.nn.Sequential(mg.nn.Linear(6, 16), mg.nn.GELU(), mg.nn.Linear(16, 16),
                                 mg.nn.Tanh(), mg.nn.Linear(16, 3))
        forward = mg.compile(model, fullgraph=True) if compile_model else model
        data = np.random.default_rng(2)
        x1, x2 = (mg.tensor(data.standard_normal((5, 6)).astype(np.float32))
                  for _ in range(2))
        forward(x1).sum().backward()  # the capture
        first, second = forward(x1), forward(x2)
        (second * second).sum().backward()
        (first * 3.0).sum().backward(retain_graph=True)
        (first * 3.0).sum().backward()
        return [p.grad.numpy().copy() for p in model.parameters()]

    for got, want in zip(run(True), run(False), strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_plan_of_small_arrays_takes_no_block(monkeypatch):
    """Below MIN_BYTES the C allocator serves arrays from memory it keeps: no buffers, and
    a replay pays nothing for them."""
    monkeypatch.setattr(buffers, "MIN_BYTES", 64 * 2**10)
    small, large = mg.tensor(_floats(64, 32)), mg.tensor(_floats(512, 64))
    for x, buffered in ((small, 0), (large, 4)):
        compiled = mg.compile(_chain, fullgraph=True)
        with mg.no_grad():
            compiled(x, mg.tensor(_floats(x.shape[1], x.shape[1])))
        (plan,) = compiled.plans()
        assert (len(plan.layout.slots) if plan.layout else 0) == buffered
