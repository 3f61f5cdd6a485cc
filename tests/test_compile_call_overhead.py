"""The facts a compiled call is looked up by, each checked alone: a call that differs in
one of them gets another plan (or runs eagerly), never a plan captured for another call.
Also the fused runner's result arrays: reused only while the caller holds none of them.
"""
from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_bits_equal

import minigrad as mg
from minigrad.compile.fusion import _runner
from minigrad.compile.steps import Fused

# a step that falls back to eager fails the test, except where a test expects it
pytestmark = pytest.mark.filterwarnings("error:mg.compile")


def _plans(compiled) -> int:
    return compiled._plan_count


def test_a_tensor_in_a_keyword_or_a_nested_list_is_part_of_the_key():
    def f(x, terms, scale=None):
        return (x * terms[0] + terms[1] * scale["by"]).sum(0)

    compiled = mg.compile(f)
    rng = np.random.default_rng(0)

    def draw(*shape, dtype=np.float32):
        return mg.tensor(rng.standard_normal(shape).astype(dtype))

    x = draw(3, 4)
    cases = [
        (x, [draw(4), draw(3, 4)], {"by": draw(4)}),
        (x, [draw(4), draw(3, 4)], {"by": draw(4)}),  # the same facts: replayed
        (x, [draw(4), draw(3, 4)], {"by": draw(3, 1)}),  # the keyword's shape
        (x, [draw(4), draw(3, 4)], {"by": draw(4, dtype=np.float64)}),  # its dtype
        (x, [draw(4), draw(4, 3).T], {"by": draw(4)}),  # the nested tensor's strides
        (x, [draw(3, 4), draw(3, 4)], {"by": draw(4)}),  # the nested tensor's shape
    ]
    for x_now, terms, scale in cases:
        assert_bits_equal(compiled(x_now, terms, scale=scale).array,
                          f(x_now, terms, scale=scale).array)
    assert _plans(compiled) == 5


def test_a_keyword_sharing_memory_with_a_positional_argument_has_its_own_plan():
    def add_into(a, b=None):
        with mg.no_grad():
            a.add_(b)
            return a * b

    compiled = mg.compile(add_into)
    assert_bits_equal(compiled(mg.ones(3), b=mg.full((3,), 2.0)).array,
                      np.float32([6, 6, 6]))
    z = mg.ones(3)
    assert_bits_equal(compiled(z, b=z).array, np.float32([4, 4, 4]))  # z doubled, squared
    assert _plans(compiled) == 2


def test_requires_grad_of_an_argument_chooses_the_plan():
    compiled = mg.compile(lambda x: (x * x).sum())
    values = np.float32([1, 2, 3])
    plain = compiled(mg.tensor(values))
    assert plain.grad_fn is None
    x = mg.tensor(values, requires_grad=True)
    out = compiled(x)
    out.backward()
    assert_bits_equal(x.grad.array, 2 * values)
    assert _plans(compiled) == 2


def test_anomaly_mode_chooses_the_plan():
    compiled = mg.compile(lambda x: (x * 2).exp())
    x = mg.randn(3)
    compiled(x)
    with mg.autograd.detect_anomaly():
        assert_bits_equal(compiled(x).array, (x * 2).exp().array)
    assert _plans(compiled) == 2


def test_an_autocast_region_on_the_cpu_is_not_replayed():
    compiled = mg.compile(lambda a, b: a @ b)
    a, b = mg.randn(4, 4), mg.randn(4, 4)
    compiled(a, b)
    with mg.autocast("cpu"), pytest.warns(RuntimeWarning, match="autocast region"):
        out = compiled(a, b)
    assert out.dtype == mg.float16
    assert _plans(compiled) == 1


def _accumulate_into(weight):
    def step(x):
        (x * weight).sum().backward()
        return weight.grad

    return step


@pytest.mark.parametrize("new_grad", [
    lambda g: mg.tensor(g.astype(np.float64)),  # another dtype
    lambda g: mg.tensor(np.ascontiguousarray(np.stack([g, g], 1)))[:, 0],  # other strides
    lambda g: mg.tensor(np.stack([g, g])),  # another shape (broadcast accumulates)
])
def test_a_gradient_read_from_outside_with_other_facts_is_not_replayed(new_grad):
    weight = mg.randn(3, requires_grad=True)
    compiled = mg.compile(_accumulate_into(weight))
    x = mg.randn(3)
    compiled(x)
    compiled(x)  # .grad accumulates from here
    start = new_grad(np.float32([1, 2, 3]))
    weight.grad = start
    expected = start.array + x.array
    got = compiled(x)
    assert_bits_equal(got.array, expected.astype(got.array.dtype))
    # the first plan sets .grad, the second adds into a float32 (3,) C-ordered one
    assert _plans(compiled) == 3


@pytest.mark.parametrize("new_array", [
    lambda a: a.astype(np.float64),  # another dtype and strides
    lambda a: np.arange(a.size, dtype=np.int32).reshape(a.shape),  # another dtype alone
    lambda a: np.asfortranarray(a),  # other strides
    lambda a: np.ones((4, 3), np.float32),  # another shape
])
def test_a_parameter_whose_array_has_other_facts_is_not_replayed(new_array):
    mg.manual_seed(0)
    model = mg.nn.Linear(3, 2, bias=False)
    compiled = mg.compile(model)
    x = mg.randn(5, 3)
    with mg.no_grad():
        compiled(x)
        model.weight.array = new_array(model.weight.array)
        out = compiled(x)
        assert_bits_equal(out.array, model(x).array)
    assert _plans(compiled._compiled_forward) == 2


def test_whether_an_arguments_gradient_is_none_chooses_the_plan():
    def step(x):
        (x * x).sum().backward()
        return x.grad

    compiled = mg.compile(step)
    x = mg.tensor(np.float32([1, 2, 3]), requires_grad=True)
    assert_bits_equal(compiled(x).array, np.float32([2, 4, 6]))
    assert_bits_equal(compiled(x).array, np.float32([4, 8, 12]))
    x.grad = None
    assert_bits_equal(compiled(x).array, np.float32([2, 4, 6]))
    assert _plans(compiled) == 2


def test_an_attribute_of_a_module_chooses_the_plan():
    class Scale(mg.nn.Module):
        def __init__(self):
            super().__init__()
            self.factor = 2.0

        def forward(self, x):
            return x * self.factor

    module = Scale()
    compiled = mg.compile(module)
    x = mg.randn(3)
    for factor in (2.0, 3.0, 2.0):
        module.factor = factor
        assert_bits_equal(compiled(x).array, (x * factor).array)
    assert _plans(compiled._compiled_forward) == 2


def _group(compiled) -> Fused:
    (entry,) = [e for entries in compiled._plans.values() for e in entries]
    (group,) = [step for step in entry.plan.steps if isinstance(step, Fused)]
    return group


def test_each_replay_returns_new_result_arrays(monkeypatch):
    monkeypatch.setenv("MINIGRAD_COMPILE_FUSION", "1")
    program = lambda a, b, c: ((a + b) * c, (a + b) * c + b)  # noqa: E731
    compiled = mg.compile(program)
    rng = np.random.default_rng(1)
    calls = [[mg.tensor(rng.standard_normal((3, 4)).astype(np.float32)) for _ in range(3)]
             for _ in range(3)]
    results = [compiled(*tensors) for tensors in calls]  # a capture, then two replays
    assert _group(compiled)
    assert len({id(t.array) for pair in results for t in pair}) == 6
    for got, tensors in zip(results, calls, strict=True):
        for g, want in zip(got, program(*tensors), strict=True):
            assert_bits_equal(g.array, want.array)


@pytest.mark.parametrize("inputs", [0, 1, 3])
@pytest.mark.parametrize("results", [1, 2])
def test_a_runner_takes_any_number_of_inputs_and_results(inputs, results):
    def kernel(*arrays):  # out_k = k + the sum of the inputs
        total = sum(arrays[:inputs], np.zeros(2))
        for k, out in enumerate(arrays[inputs:]):
            out[...] = total + k

    run = _runner(kernel, inputs, [((2,), np.dtype(np.float64))] * results, np.empty)
    got = run(*[np.full(2, 10.0)] * inputs)
    got = got if results > 1 else (got,)
    for k, out in enumerate(got):
        np.testing.assert_array_equal(out, np.full(2, 10.0 * inputs + k))
