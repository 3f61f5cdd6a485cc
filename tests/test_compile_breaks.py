"""What a replay cannot redo never gives a wrong result: a step that reads a tensor into
Python (.item(), bool(), .numpy(), print) runs eagerly, with one warning naming the op
and the line; fullgraph=True raises instead. Values read by library code (an index
check, the count of rows a loss averages) are checked again at every replay, and the
eager step runs when one differs."""
from __future__ import annotations

import inspect
import random
import types
import warnings

import numpy as np
import pytest
from helpers import assert_bits_equal

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from minigrad.compile import Unsupported


def _line_of(function, text: str) -> int:
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _item(x):
    y = x.exp()
    return y * 2 if y.sum().item() > 3 else y


def _bool(x):
    y = x.exp()
    return y * 2 if y.sum() > 3 else y


def _numpy(x):
    return x * float(x.numpy().max())


def _printed(x):
    y = x * 2
    print(y)
    return y + 1


@pytest.mark.parametrize("step, op, text", [
    (_item, "Tensor.item()", "y.sum().item()"),
    (_bool, "Tensor.__bool__()", "y.sum() > 3"),
    (_numpy, "Tensor.numpy()", "x.numpy()"),
    (_printed, "Tensor.__repr__()", "print(y)"),
])
def test_a_value_read_into_python_runs_the_step_eagerly_with_one_warning(step, op, text,
                                                                       capsys):
    compiled = mg.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for values in ([0.1, 0.2], [2.0, 1.0], [0.3, -4.0]):
            x = mg.tensor(values)
            assert_bits_equal(compiled(x).array, step(x).array)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert f"{step.__name__} runs eagerly: {op} reads a tensor's value" in messages[0]
    assert f"test_compile_breaks.py:{_line_of(step, text)} (" in messages[0]
    assert text in messages[0]
    assert compiled._plan_count == 0
    if step is _printed:  # printed by each eager run, once per call (not by the capture)
        assert capsys.readouterr().out.count("tensor(") == 6


def test_fullgraph_raises_where_the_step_would_run_eagerly():
    compiled = mg.compile(_bool, fullgraph=True)
    for _ in range(2):  # every call, not only the one that tried to capture it
        with pytest.raises(Unsupported, match=r"_bool cannot be captured whole: "
                                              r"Tensor.__bool__\(\).*test_compile_breaks.py"):
            compiled(mg.tensor([1.0, 2.0]))


def test_a_result_object_holding_tensors_runs_eagerly():
    class Result:
        def __init__(self, value):
            self.value = value

    compiled = mg.compile(lambda x: Result(x * 2))
    with pytest.warns(RuntimeWarning, match="it returns a Result holding tensors"):
        first = compiled(mg.ones(2))
    second = compiled(mg.full((2,), 3.0))
    assert_bits_equal(first.value.array, np.float32([2, 2]))
    assert_bits_equal(second.value.array, np.float32([6, 6]))


def test_control_flow_on_array_values_is_checked_at_every_replay():
    def sign_dependent(x):
        y = x * 2
        if (y.array > 0).all():  # raw array code: the value is checked again each call
            return y + 1
        return y - 1

    compiled = mg.compile(sign_dependent)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="mg.compile")
        for x in (mg.ones(3), -mg.ones(3), mg.full((3,), 2.0), mg.tensor([1.0, -1.0, 1.0])):
            assert_bits_equal(compiled(x).array, sign_dependent(x).array)
    assert compiled._plan_count == 1


def test_an_index_out_of_range_at_replay_raises_as_eagerly():
    mg.manual_seed(0)
    embedding = nn.Embedding(5, 3)
    compiled = mg.compile(embedding)
    with mg.no_grad():
        assert_bits_equal(compiled(mg.tensor([0, 4])).array, embedding.weight.array[[0, 4]])
        with pytest.raises(IndexError, match=r"embedding: ids must be in \[0, 5\)"):
            compiled(mg.tensor([1, 5]))
        assert_bits_equal(compiled(mg.tensor([3, 1])).array, embedding.weight.array[[3, 1]])
    assert compiled._compiled_forward._plan_count == 1


def test_a_mean_over_the_rows_not_ignored_counts_them_at_every_replay():
    logits = mg.randn(4, 3)
    compiled = mg.compile(lambda target: F.cross_entropy(logits, target, ignore_index=0))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="mg.compile")
        for target in ([1, 2, 1, 2], [1, 0, 0, 2], [0, 0, 0, 1], [2, 2, 1, 1]):
            target = mg.tensor(target)
            assert_bits_equal(compiled(target).array,
                        F.cross_entropy(logits, target, ignore_index=0).array)


@pytest.mark.parametrize("state", ["a number", "a list changed in place"])
def test_a_step_that_changes_python_state_runs_eagerly(state):
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0 if state == "a number" else []

        def forward(self, x):
            if state == "a number":
                self.calls += 1
            else:
                self.calls.append(x.shape[0])
            return x * 2

    module = Counting()
    compiled = mg.compile(module)
    with pytest.warns(RuntimeWarning, match=r"the step changes Counting.calls"):
        compiled(mg.ones(2))
    compiled(mg.ones(2))
    # once per call: the capture's run was undone (the list's items in place)
    assert module.calls == (2 if state == "a number" else [2, 2])


CALLS = 0  # a global counter that a compiled step increments


def test_a_step_that_changes_a_global_it_reads_runs_eagerly_and_counts_once_per_call():
    global CALLS
    CALLS = 0

    def counting(x):
        global CALLS
        CALLS += 1
        return x * 2

    compiled = mg.compile(counting)
    with pytest.warns(RuntimeWarning, match=r"the step changes CALLS, a Python value it"):
        compiled(mg.ones(2))
    compiled(mg.ones(2))
    assert CALLS == 2  # the capture's run was undone


@pytest.mark.parametrize("draw, source", [
    (lambda: random.random(), "Python's random module"),
    (lambda: np.random.randint(1, 100), "NumPy's global random state"),
], ids=["random.random", "np.random.randint"])
def test_a_step_drawing_from_a_random_state_outside_minigrad_runs_eagerly(draw, source):
    x = mg.ones(3)
    compiled = mg.compile(lambda x: x * draw())
    random.seed(5)
    np.random.seed(5)
    with pytest.warns(RuntimeWarning, match=f"the step draws from {source}"):
        got = [compiled(x).tolist() for _ in range(3)]
    random.seed(5)
    np.random.seed(5)
    assert got == [(x * draw()).tolist() for _ in range(3)]  # each call draws, once


def test_a_step_that_prints_warns_that_it_prints_at_the_capture_only(capsys):
    def step(x):
        y = x * 2
        print("step ran")  # Python: a replay runs none of it
        return y

    compiled = mg.compile(step)
    line = _line_of(step, 'print("step ran")')
    with pytest.warns(RuntimeWarning, match=rf"print\(\) at .*:{line} prints when the step is "
                                            "captured, not at its replays"):
        outputs = [compiled(mg.ones(2)).tolist() for _ in range(3)]
    assert outputs == [[2.0, 2.0]] * 3
    assert capsys.readouterr().out == "step ran\n"  # once: at the capture


class _ReadsItsSum(nn.Module):
    def forward(self, x):
        return x * x.sum().item()


def test_a_warning_names_the_users_call_of_a_compiled_function_or_module():
    for compiled in (mg.compile(lambda x: x * x.sum().item()), mg.compile(_ReadsItsSum())):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = inspect.currentframe().f_lineno + 1
            compiled(mg.ones(2))
        assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


SETTINGS = types.SimpleNamespace(precise=True)  # a setting a step changes for a while
LAZY = None  # a global a step sets up at its first call


def test_a_setting_changed_for_the_call_and_restored_is_left_as_it_was():
    def scaled(x):
        return x * (2.0 if SETTINGS.precise else 3.0)

    def step(x):
        SETTINGS.precise = False  # read by scaled() as the step left it, not as it was
        try:
            return scaled(x)
        finally:
            SETTINGS.precise = True

    with pytest.raises(Unsupported, match="the step changes SETTINGS.precise"):
        mg.compile(step, fullgraph=True)(mg.ones(2))
    assert SETTINGS.precise is True  # not put back to what scaled() found
    compiled = mg.compile(step)
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert compiled(mg.ones(2)).tolist() == [3.0, 3.0]
        assert SETTINGS.precise is True


def test_an_object_counting_inside_a_function_the_step_calls_counts_once_per_call():
    class Schedule:  # the annotated Transformer's NoamOpt keeps its step so
        def __init__(self):
            self.steps = 0

        def advance(self):
            self.steps += 1
            return float(self.steps)

    schedule = Schedule()
    compiled = mg.compile(lambda x: x * schedule.advance())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = [compiled(mg.ones(1)).item() for _ in range(3)]
    assert got == [1.0, 2.0, 3.0] and schedule.steps == 3


def test_a_global_set_up_at_the_first_call_is_captured_at_the_next():
    global LAZY
    LAZY = None

    def table():
        global LAZY
        if LAZY is None:
            LAZY = 3.0
        return LAZY

    compiled = mg.compile(lambda x: x * table())
    with pytest.warns(RuntimeWarning, match="the step changes LAZY"):
        compiled(mg.ones(2))
    for _ in range(2):
        assert compiled(mg.ones(2)).tolist() == [3.0, 3.0]
    assert compiled._plan_count == 1


def test_an_error_of_the_step_propagates_and_leaves_the_state_as_eager_leaves_it():
    weight = mg.ones(2, requires_grad=True)

    def step(x):
        (weight * x).sum().backward()
        return x.reshape(3)  # fails after backward accumulated into weight.grad

    with pytest.raises(RuntimeError, match="reshape"):
        mg.compile(step)(mg.tensor([1.0, 2.0]))
    assert_bits_equal(weight.grad.array, np.float32([1.0, 2.0]))  # accumulated once


def test_tensors_on_the_gpu_are_captured_not_run_eagerly(gpu_or_stand_in):
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU()).to("gpu")
    compiled = mg.compile(model)
    x = mg.randn(2, 3).to("gpu")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="mg.compile")
        out = compiled(x)
    expected = model(x)
    assert out.device == "gpu" and len(compiled._compiled_forward.plans()) == 1
    assert_bits_equal(out.cpu().array, expected.cpu().array)
    out.sum().backward()  # the recorded backward, on the GPU
    got_grad = model[0].weight.grad.cpu().array.copy()
    model.zero_grad()
    expected.sum().backward()
    assert model[0].weight.grad.device == "gpu"
    assert_bits_equal(got_grad, model[0].weight.grad.cpu().array)


def test_a_number_numpy_computes_from_arrays_is_checked_at_every_replay():
    def two_positive(x):
        if np.count_nonzero(x.array > 0) == 2:  # a Python int from array values
            return x * 2
        return x - 1

    compiled = mg.compile(two_positive)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="mg.compile")
        for values in ([1.0, 2.0, -1.0], [1.0, -2.0, -1.0], [3.0, 2.0, -5.0]):
            x = mg.tensor(values)
            assert_bits_equal(compiled(x).array, two_positive(x).array)
    assert compiled._plan_count == 1


def test_a_failed_check_draws_the_random_numbers_eager_draws():
    mg.manual_seed(0)
    layer = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))

    def loss_of(x, target):
        return F.cross_entropy(layer(x), target, ignore_index=0)

    compiled = mg.compile(loss_of)
    x = mg.randn(4, 3)
    for target in ([1, 2, 1, 2], [1, 0, 0, 2], [2, 1, 2, 1]):  # the second fails a check
        state = mg.get_rng_state()
        got = compiled(x, mg.tensor(target))
        after = mg.get_rng_state()
        mg.set_rng_state(state)
        assert_bits_equal(got.array, loss_of(x, mg.tensor(target)).array)
        assert mg.get_rng_state() == after


def test_a_tensor_with_hooks_runs_the_step_eagerly():
    weight = mg.randn(3, requires_grad=True)
    seen = []
    weight.register_hook(lambda grad: seen.append(grad))
    compiled = mg.compile(lambda x: (x * weight).sum())
    x = mg.randn(3)
    with pytest.warns(RuntimeWarning, match=r"a tensor of shape \(3,\) with hooks"):
        out = compiled(x)
    out.backward()
    assert len(seen) == 1
    assert_bits_equal(seen[0].array, x.array)


@pytest.mark.parametrize("kind", ["forward", "forward_pre"])
def test_a_module_with_forward_hooks_inside_the_step_runs_it_eagerly(kind):
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    seen = []
    if kind == "forward":
        model[1].register_forward_hook(lambda module, args, output: seen.append(output))
    else:
        model[1].register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    compiled = mg.compile(model)
    for call in range(3):  # the hook sees every call's activation, not the capture's
        x = mg.randn(2, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled(x)
        assert len(caught) == (call == 0)
        if call == 0:
            assert "a forward hook of ReLU" in str(caught[0].message)
        hidden = F.linear(x, model[0].weight, model[0].bias)
        want = F.relu(hidden) if kind == "forward" else hidden
        assert len(seen) == call + 1
        assert_bits_equal(seen[-1].array, want.array)
    with pytest.raises(Unsupported, match="a forward hook of ReLU"):
        mg.compile(model, fullgraph=True)(mg.randn(2, 3))


def test_post_accumulate_hooks_run_after_a_compiled_forward_not_inside_a_step():
    weight = mg.randn(3, requires_grad=True)
    seen = []
    weight.register_post_accumulate_grad_hook(lambda leaf: seen.append(leaf.grad.array.copy()))
    compiled = mg.compile(lambda x: (x * weight).sum())
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="mg.compile")
        for _ in range(2):  # the backward is eager: AccumulateGrad runs the hook
            weight.grad = None
            x = mg.randn(3)
            compiled(x).backward()
            assert_bits_equal(seen[-1], x.array)

    def whole_step(x):
        (x * weight).sum().backward()

    with pytest.warns(RuntimeWarning, match="post-accumulate hooks"):
        mg.compile(whole_step)(mg.randn(3))
    assert len(seen) == 3


def test_a_check_that_fails_after_an_update_in_place_leaves_the_update_to_eager():
    def make():
        mg.manual_seed(0)
        return nn.BatchNorm1d(3), nn.Embedding(4, 3)

    def step(modules, x, ids):
        norm, embedding = modules
        with mg.no_grad():
            out = norm(x)  # updates the running statistics in place, then
            return out + embedding(ids)  # the embedding checks the ids' range

    compiled_modules, eager_modules = make(), make()
    compiled = mg.compile(lambda x, ids: step(compiled_modules, x, ids))
    for ids in ([0, 3], [1, 2], [1, 4]):  # the last is out of range: eager raises
        x = mg.randn(2, 3)
        try:
            want = step(eager_modules, x, mg.tensor(ids))
        except IndexError:
            with pytest.raises(IndexError, match="ids must be in"):
                compiled(x, mg.tensor(ids))
        else:
            assert_bits_equal(compiled(x, mg.tensor(ids)).array, want.array)
        for got, expected in zip(compiled_modules[0].buffers(), eager_modules[0].buffers(),
                                 strict=True):
            assert_bits_equal(got.array, expected.array)  # updated once per call, as eagerly


def test_work_the_capture_cannot_see_is_caught_by_comparing_the_first_replay():
    numba = pytest.importorskip("numba")

    @numba.njit
    def add_one_in_place(values):
        for i in range(values.shape[0]):
            values[i] += 1.0

    def step(x):
        add_one_in_place(x.array)  # Numba writes the memory: no array hook sees it
        return x * 2

    x = mg.tensor([1.0, 2.0])
    with pytest.warns(RuntimeWarning, match="its replay differs from the eager run in "
                                            "output 0"):
        out = mg.compile(step)(x)
    assert_bits_equal(out.array, np.float32([4.0, 6.0]))
    assert_bits_equal(x.array, np.float32([2.0, 3.0]))  # changed once, by the eager run


def test_a_value_the_backward_reads_is_checked_when_the_forward_replays():
    weight = mg.randn(3, 3, requires_grad=True)

    def loss_of(x, target):
        return F.cross_entropy(x @ weight, target, ignore_index=0)

    compiled = mg.compile(loss_of)
    for target in ([1, 2, 1, 2], [1, 0, 0, 2], [2, 2, 1, 1]):  # the count its backward reads
        x, target = mg.randn(4, 3), mg.tensor(target)
        weight.grad = None
        compiled(x, target).backward()
        got = weight.grad.array.copy()
        weight.grad = None
        loss_of(x, target).backward()
        assert_bits_equal(got, weight.grad.array)


def test_a_collective_between_processes_runs_the_step_eagerly():
    def reduced(x):
        y = x * 2
        mg.distributed.all_reduce(y)
        return y

    with pytest.warns(RuntimeWarning, match=r"distributed.all_reduce\(\) \(communication"):
        with pytest.raises(Exception) as raised:  # eagerly: no process group
            mg.compile(reduced)(mg.ones(2))
    with pytest.raises(type(raised.value)):
        reduced(mg.ones(2))
