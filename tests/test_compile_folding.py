"""Constant folding (minigrad/compile/folding.py): steps whose results are the same at
every replay are made once, and only where nothing can change or keep what they made."""
import numpy as np

import minigrad as mg
from minigrad.compile.steps import Folded


def _folded(compiled) -> list:
    return [step for plan in compiled.plans() for step in plan.steps
            if isinstance(step, Folded)]


def test_the_seed_of_a_backward_is_made_once_and_gradients_still_accumulate():
    p = mg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    q = mg.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)

    def step():
        out = ((p + q) * q).sum()
        out.backward()
        return out, None  # no gradient for the index

    compiled = mg.compile(step, fullgraph=True)
    for _ in range(4):
        compiled()
    assert _folded(compiled), "the backward's seed (ones, broadcast) was not folded"
    # four accumulations: d/dp = q, d/dq = p + 2q, four times each
    np.testing.assert_array_equal(p.grad.numpy(), 4 * q.numpy())
    np.testing.assert_array_equal(q.grad.numpy(), 4 * (p.numpy() + 2 * q.numpy()))


class _ScatterRows(mg.autograd.Function):
    """out = x[index]; the backward adds each row's gradient back with np.add.at."""

    def forward(self, x, index):
        self.index, self.rows = index, x.shape[0]
        return x[index]

    def backward(self, grad):  # on arrays, as minigrad's own backward rules compute
        out = np.zeros((self.rows,) + tuple(grad.shape[1:]), dtype=grad.array.dtype)
        np.add.at(out, self.index, grad.array)  # writes into the zeros: never folded
        return mg.tensor(out), None  # no gradient for the index


def test_zeros_that_a_later_step_adds_into_are_made_afresh_at_each_replay():
    weight = mg.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    index = mg.tensor([0, 2, 0, 1])

    def step(scale):
        weight.grad = None
        (_ScatterRows.apply(weight, index) * scale).sum().backward()
        return weight.grad

    compiled = mg.compile(step, fullgraph=True)
    for value in (1.0, 2.0, 3.0, 4.0):
        grad = compiled(mg.tensor(value)).numpy()
        np.testing.assert_array_equal(grad, [[2 * value] * 2, [value] * 2, [value] * 2])


def test_an_array_the_step_returns_is_new_at_each_call():
    x = mg.tensor([1.0, 2.0, 3.0])
    compiled = mg.compile(lambda x: (x * 2, mg.ones(3)), fullgraph=True)
    for _ in range(3):
        _, ones = compiled(x)
        np.testing.assert_array_equal(ones.numpy(), [1.0, 1.0, 1.0])
        ones.add_(5.0)  # the caller's to change: the next call makes another


def test_an_array_written_in_place_inside_the_step_is_made_afresh():
    def step(x):
        t = mg.zeros(3)
        t.add_(x)  # into the zeros: the next replay must start from zeros again
        return t.sum()

    compiled = mg.compile(step, fullgraph=True)
    for value in (1.0, 2.0, 3.0):
        assert compiled(mg.tensor([value, value, value])).item() == 3 * value


def test_a_gradient_handed_to_the_user_is_not_shared_between_calls():
    w = mg.zeros(3, requires_grad=True)

    def step():
        w.grad = None
        w.sum().backward()  # w.grad: a copy of the seed broadcast, made from it alone

    compiled = mg.compile(step, fullgraph=True)
    for _ in range(3):
        compiled()
        first = w.grad
        np.testing.assert_array_equal(first.numpy(), [1.0, 1.0, 1.0])
        first.add_(5.0)  # the user's gradient, changed in place
    np.testing.assert_array_equal(first.numpy(), [6.0, 6.0, 6.0])


class _IncrementedCopy(mg.autograd.Function):
    """A forward that writes into its input (which no recorder sees: it runs on arrays)."""

    def forward(self, x):
        x += 1.0
        return x.copy()

    def backward(self, grad):
        return grad


def test_an_array_an_autograd_function_of_the_users_reads_is_made_afresh():
    compiled = mg.compile(lambda: _IncrementedCopy.apply(mg.zeros(3)), fullgraph=True)
    for _ in range(3):
        np.testing.assert_array_equal(compiled().numpy(), [1.0, 1.0, 1.0])
