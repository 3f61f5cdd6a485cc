"""mg.compile's API: torch.compile's signature, a function captured once and replayed, a
compiled module that is still the module, its forward as one node of the eager graph,
and MINIGRAD_DEBUG=compile."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import assert_bits_equal

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from minigrad.autograd import Function
from minigrad.compile import OptimizedModule

# a step that falls back to eager fails the test
pytestmark = pytest.mark.filterwarnings("error:mg.compile")


def test_compile_takes_torch_compile_arguments_and_works_as_a_decorator():
    @mg.compile
    def plain(x):
        return x * 2

    @mg.compile(fullgraph=True, dynamic=False, mode="reduce-overhead")
    def configured(x):
        return x + 1

    x = mg.arange(4.0)
    assert_bits_equal(plain(x).array, x.array * 2)
    assert_bits_equal(configured(x).array, x.array + 1)
    assert plain.__name__ == "plain" and mg.compile(plain.__wrapped__, disable=True) is \
        plain.__wrapped__
    with pytest.raises(ValueError, match="unknown mode 'fastest'.*'reduce-overhead'"):
        mg.compile(plain, mode="fastest")
    with pytest.raises(TypeError, match="dynamic must be None, True or False, got 'yes'"):
        mg.compile(plain, dynamic="yes")
    with pytest.raises(TypeError, match="expected a function or a Module, got int"):
        mg.compile(3)


def test_the_function_runs_once_per_plan_and_the_replay_reads_this_calls_values():
    calls = []
    weight = mg.tensor([1.0, 2.0, 3.0])

    @mg.compile
    def scaled_softmax(x):
        calls.append(1)  # Python runs only while the step is captured
        return (x * weight).softmax(-1) + x.exp().sum()

    rng = np.random.default_rng(0)
    for _ in range(4):
        x = mg.tensor(rng.standard_normal(3).astype(np.float32))
        with mg.no_grad():
            weight.mul_(1.5)  # changed in place between calls: read again by each replay
        eager = (x * weight).softmax(-1) + x.exp().sum()
        assert_bits_equal(scaled_softmax(x).array, eager.array)
    assert len(calls) == 1


def test_a_step_that_returns_nothing_is_replayed():
    runs = []
    for compile_step in (False, True):
        mg.manual_seed(0)
        model = nn.Linear(3, 2)
        optimizer = mg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = mg.randn(4, 3)

        def step(model=model, optimizer=optimizer, x=x):
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()

        step = mg.compile(step) if compile_step else step
        assert [step() for _ in range(3)] == [None] * 3
        runs.append([p.numpy().copy() for p in model.parameters()])
        if compile_step:  # zero_grad reads no .grad, and the optimizer is live Python:
            assert len(step.plans()) == 1  # the first step's plan fits the later ones
    for eager, compiled in zip(*runs, strict=True):
        assert_bits_equal(compiled, eager)


def test_a_method_can_be_compiled_with_the_decorator():
    class Scaler:
        def __init__(self, factor):
            self.factor = mg.tensor(factor)

        @mg.compile
        def apply(self, x):
            return x * self.factor

    x = mg.tensor([1.0, -2.0])
    assert_bits_equal(Scaler(3.0).apply(x).array, np.float32([3.0, -6.0]))
    assert_bits_equal(Scaler(0.5).apply(x).array, np.float32([0.5, -1.0]))  # its own plan


def test_a_compiled_module_is_the_module():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model.vocabulary = "abc"
    compiled = mg.compile(model)
    assert isinstance(compiled, OptimizedModule)
    assert compiled._orig_mod is model and compiled.vocabulary == "abc"
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in model.parameters()]
    assert list(compiled.state_dict()) == ["_orig_mod." + k for k in model.state_dict()]
    compiled.eval()
    assert not model.training and not model[1].training
    x = mg.randn(5, 3)
    with mg.no_grad():
        assert_bits_equal(compiled(x).array, model(x).array)


def test_the_hooks_of_the_compiled_module_itself_run_around_every_replay():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    inputs, outputs = [], []
    model.register_forward_pre_hook(lambda module, args: inputs.append(args[0]))
    model.register_forward_hook(lambda module, args, output: outputs.append(output) or -output)
    compiled = mg.compile(model)
    for call in range(3):
        x = mg.randn(2, 3)
        result = compiled(x)
        assert len(inputs) == len(outputs) == call + 1 and inputs[-1] is x
        want = F.relu(F.linear(x, model[0].weight, model[0].bias))
        assert_bits_equal(outputs[-1].array, want.array)
        assert_bits_equal(result.array, -want.array)  # what the hook returned
    assert len(compiled._compiled_forward.plans()) == 1


def _make_model():
    mg.manual_seed(1)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.LayerNorm(8), nn.Linear(8, 3))


def test_a_compiled_forward_is_one_node_of_the_eager_graph():
    eager, compiled_model = _make_model(), _make_model()
    compiled = mg.compile(compiled_model)
    x, target = mg.randn(5, 6), mg.tensor([0, 2, 1, 1, 0])
    for _ in range(2):  # the capture, then a replay
        for model in (eager, compiled_model):
            model.zero_grad()
        loss_eager = F.cross_entropy(eager(x), target)
        loss = F.cross_entropy(compiled(x), target)
        loss_eager.backward()
        loss.backward()
        assert_bits_equal(loss.array, loss_eager.array)
        for p, q in zip(compiled_model.parameters(), eager.parameters(), strict=True):
            assert_bits_equal(p.grad.array, q.grad.array)
    node = loss.grad_fn.next_functions[0][0]
    assert node.name == "CompiledBackward0"
    leaves = {id(n.variable) for n, _ in node.next_functions if n is not None}
    assert leaves == {id(p) for p in compiled_model.parameters()}


def test_the_input_of_a_compiled_forward_gets_its_gradient():
    weight = mg.randn(4, 3, requires_grad=True)
    compiled = mg.compile(lambda x: (x @ weight).tanh())
    for _ in range(2):
        x = mg.randn(2, 4, requires_grad=True)
        gradient = mg.randn(2, 3)
        compiled(x).backward(gradient)
        x_eager = x.detach().requires_grad_()
        (x_eager @ weight).tanh().backward(gradient)
        assert_bits_equal(x.grad.array, x_eager.grad.array)


def test_a_compiled_forward_has_no_double_backward():
    weight = mg.randn(3, requires_grad=True)
    compiled = mg.compile(lambda x: (x * weight).exp().sum())
    loss = compiled(mg.randn(3))
    with pytest.raises(RuntimeError, match="not differentiable again.*create_graph"):
        mg.autograd.grad(loss, [weight], create_graph=True)


def test_minigrad_debug_compile_prints_the_plan_and_not_the_profile():
    code = ("import minigrad as mg\n"
            "f = mg.compile(lambda x: (x * 2).exp())\n"
            "f(mg.ones(3))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**_environment(), "MINIGRAD_DEBUG": "compile"}, check=True,
                            timeout=120)
    assert "[minigrad compile] <lambda>" in result.stderr
    assert "external array of a tensor (3,) float32" in result.stderr
    assert "Exp.forward" in result.stderr
    assert "[minigrad profile]" not in result.stdout + result.stderr


def _environment() -> dict:
    return {k: v for k, v in os.environ.items() if k != "MINIGRAD_DEBUG"}


def test_an_update_in_place_bumps_the_version_counter_as_eagerly():
    total = mg.zeros(3)

    @mg.compile
    def accumulate(x):
        with mg.no_grad():
            total.add_(x)
        return total * 2

    for _ in range(3):
        out = accumulate(mg.ones(3))
    assert_bits_equal(out.array, np.float32([6, 6, 6]))
    assert total._version[0] == 3


def test_a_step_that_runs_backward_gives_each_calls_argument_its_gradient():
    @mg.compile
    def gradient_of_square(x):
        (x * x).sum().backward()
        return x.grad

    for _ in range(3):
        x = mg.randn(3, requires_grad=True)
        returned = gradient_of_square(x)
        assert_bits_equal(x.grad.array, 2 * x.array)
        assert_bits_equal(returned.array, 2 * x.array)


class _TwiceTanh(Function):
    """out = 2 t, t = tanh x (saved: neither input nor output);  dx = g 2 (1 - t^2)"""

    def forward(self, x):
        t = np.tanh(x)
        self.save_for_backward(t)
        return 2 * t

    def backward(self, grad):
        (t,) = self.saved
        return grad * (1 - t * t) * 2


def test_an_op_that_saves_what_it_computed_is_replayed_with_it():
    weight = mg.randn(3, requires_grad=True)
    compiled = mg.compile(lambda x: _TwiceTanh.apply(x * weight).sum())
    for _ in range(2):
        x = mg.randn(3)
        weight.grad = None
        compiled(x).backward()
        got = weight.grad.array.copy()
        weight.grad = None
        _TwiceTanh.apply(x * weight).sum().backward()
        assert_bits_equal(got, weight.grad.array)


def test_a_tensor_from_outside_read_as_an_array_is_read_again_at_each_replay():
    ids, table = mg.tensor([0, 2]), mg.randn(4, 3)
    lookup = mg.compile(lambda: F.embedding(ids, table))  # reads ids.array as an array
    for new_ids in ([0, 2], [3, 1], [2, 2]):
        ids.array = np.array(new_ids)  # another array in the same tensor
        assert_bits_equal(lookup().array, table.array[new_ids])



_FIRST_NUMBA_USE_IN_A_CAPTURE = """
import numba, numpy as np, minigrad as mg
from minigrad.autograd import Function

def fill(x, scale):  # a buffer made with np.empty inside the kernel
    out = np.empty(x.shape, x.dtype)
    for i in range(x.shape[0]):
        out[i] = scale * x[i]
    return out

class Twice(Function):
    def forward(self, x):
        return numba.njit(fill)(x, 2.0)

class Thrice(Function):
    def forward(self, x):
        return numba.njit(fill)(x, 3.0)

x = mg.tensor([1.0, 2.0], dtype=mg.float64)
for op, want in ((Twice, 2.0), (Thrice, 3.0)):
    step = mg.compile(lambda x: op.apply(x) + 1, fullgraph=True)
    for _ in range(2):
        assert np.array_equal(step(x).numpy(), want * x.numpy() + 1)
    assert len(step.plans()) == 1
assert np.array_equal(numba.njit(fill)(x.numpy(), 4.0), 4 * x.numpy())  # eagerly
print("ok")
"""


def test_numba_first_used_inside_a_capture_still_knows_numpys_functions():
    # Numba registers np.empty & co. by object when its CPU target first loads, which
    # can be inside a capture, where np.empty is a recording wrapper: Numba must see
    # NumPy's own functions while it compiles, or every later kernel fails to type
    result = subprocess.run([sys.executable, "-c", _FIRST_NUMBA_USE_IN_A_CAPTURE],
                            capture_output=True, text=True, env=_environment(),
                            timeout=300)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]


def _forward_and_backward_peak(compiled: bool) -> int:
    """tracemalloc's peak over forward and backward of a 4-layer MLP whose activations
    (32 MiB) outweigh its gradients (16 MiB), after a capture."""
    import gc
    import tracemalloc

    mg.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(1024, 1024), nn.Tanh())])
    forward = mg.compile(model) if compiled else model
    x = mg.randn(1024, 1024)
    for _ in range(2):
        for p in model.parameters():
            p.grad = None
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            forward(x).square().sum().backward()
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
    return peak


def test_a_compiled_forwards_backward_frees_the_forwards_arrays_as_it_goes():
    # as the eager nodes release theirs one by one: the activations are gone before the
    # last gradients are made (kept to the end, they added 12 MiB here)
    assert _forward_and_backward_peak(True) <= 1.05 * _forward_and_backward_peak(False)


def test_namedtuples_and_dataclasses_come_back_with_each_calls_values():
    @dataclasses.dataclass
    class Output:
        logits: mg.Tensor
        best: tuple

    model = nn.Linear(3, 4)
    compiled = mg.compile(lambda x: Output(model(x), model(x).max(dim=1)))
    for call in range(3):
        x = mg.full((2, 3), float(call))
        got = compiled(x)
        want = Output(model(x), model(x).max(dim=1))
        assert type(got) is Output and type(got.best) is type(want.best)
        assert_bits_equal(got.logits.array, want.logits.array)
        assert_bits_equal(got.best.values.array, want.best.values.array)
        assert_bits_equal(got.best.indices.array, want.best.indices.array)
    assert len(compiled.plans()) == 1


def test_an_argument_or_a_parameter_returned_is_that_tensor():
    layer = nn.Linear(3, 2)
    compiled = mg.compile(lambda x: (x, layer(x), layer.bias))
    for _ in range(3):
        x = mg.randn(4, 3)
        same, out, bias = compiled(x)
        assert same is x and bias is layer.bias and bias.requires_grad
        assert_bits_equal(out.array, layer(x).array)


def test_draws_from_a_generator_are_replayed():
    generator = mg.Generator().manual_seed(3)
    compiled = mg.compile(lambda x: x + mg.randn(x.shape, generator=generator))
    reference = mg.Generator().manual_seed(3)
    for _ in range(3):
        x = mg.ones(4)
        assert_bits_equal(compiled(x).array, (x + mg.randn(x.shape, generator=reference)).array)
    assert len(compiled.plans()) == 1


def test_a_compiled_module_between_eager_layers_backpropagates_through_all():
    runs = []
    for compile_body in (False, True):
        mg.manual_seed(0)
        stem, body = nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh())
        body[0].weight = stem.weight  # shared: its gradient comes from both
        forward = mg.compile(body) if compile_body else body
        grads = []
        for call in range(3):
            stem.zero_grad()
            body.zero_grad()
            forward(stem(mg.full((2, 4), 0.1 * (call + 1)))).sum().backward()
            grads += [p.grad.numpy().copy() for p in stem.parameters()]
        runs.append(grads)
    for eager, compiled in zip(*runs, strict=True):
        np.testing.assert_allclose(compiled, eager, rtol=1e-6, atol=1e-7)


def test_a_compiled_cell_unrolled_over_time_backpropagates_through_time():
    runs = []
    for compile_cell in (False, True):
        mg.manual_seed(0)
        cell = nn.GRUCell(3, 4)
        forward = mg.compile(cell) if compile_cell else cell
        h, loss = mg.zeros(2, 4), 0
        for t in range(4):  # each call's state is the last call's output
            h = forward(mg.full((2, 3), 0.1 * t), h)
            loss = loss + h.sum()
        loss.backward()
        runs.append([p.grad.numpy() for p in cell.parameters()])
    for eager, compiled in zip(*runs, strict=True):
        assert_bits_equal(compiled, eager)


def test_an_input_changed_in_place_before_the_compiled_backward_raises_as_eagerly():
    for compile_model in (False, True):
        model = nn.Linear(3, 3)
        forward = mg.compile(model) if compile_model else model
        for _ in range(2):
            x = mg.randn(2, 3, requires_grad=True)
            out = forward(x * 1.0)
            with mg.no_grad():
                model.weight.mul_(2.0)  # an optimizer step between forward and backward
            with pytest.raises(RuntimeError, match="modified by an in-place operation"):
                out.sum().backward()


def test_an_output_changed_in_place_before_the_compiled_backward_raises_as_eagerly():
    for compile_model in (False, True):
        model = nn.Sequential(nn.Linear(3, 3), nn.Tanh())  # tanh's backward reads its output
        forward = mg.compile(model) if compile_model else model
        for _ in range(2):
            out = forward(mg.randn(2, 3))
            with mg.no_grad():
                out.mul_(2.0)
            with pytest.raises(RuntimeError, match="its output .* modified by an in-place"):
                out.sum().backward()


def test_a_compiled_forward_backpropagates_twice_with_retain_graph():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    compiled = mg.compile(model)
    x = mg.randn(3, 4)
    compiled(x)  # the capture
    loss = compiled(x).square().sum()
    loss.backward(retain_graph=True)
    once = [p.grad.array.copy() for p in model.parameters()]
    loss.backward()  # the arrays kept for the backward are still there
    for p, g in zip(model.parameters(), once, strict=True):
        assert_bits_equal(p.grad.array, g + g)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
