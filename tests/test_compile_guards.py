"""Guards: a plan replays only the combination it was captured for (the arguments'
shapes, dtypes, strides and requires_grad, and which share memory; grad and kernel
modes; the identity, shapes and requires_grad of the parameters it reached; which
gradients were None; every called module's attributes and submodules, its training flag
included; the tensors in an argument object's attributes). Another combination captures
another plan, up to CACHE_SIZE_LIMIT; then the function runs eagerly, with one warning."""
from __future__ import annotations

import dataclasses
import enum
import os
import signal
import sys
import types
import warnings
from collections import namedtuple

import numpy as np
import pytest
from helpers import assert_bits_equal

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import kernels, nn
from minigrad.compile import CACHE_SIZE_LIMIT

# a step that falls back to eager fails the test
pytestmark = pytest.mark.filterwarnings("error:mg.compile")


def _plans(compiled) -> int:
    compiled = getattr(compiled, "_compiled_forward", compiled)
    return compiled._plan_count


def test_each_shape_dtype_and_layout_of_an_argument_has_its_own_plan():
    def f(x):
        return (x * 3).sum(-1)

    compiled = mg.compile(f)
    matrix = mg.randn(3, 4)
    cases = [matrix, mg.randn(3, 4), mg.randn(2, 4), matrix.double(), matrix.T,
             matrix.T.contiguous(), mg.randn(3, 4)]
    for x in cases:
        assert_bits_equal(compiled(x).array, f(x).array)
    assert _plans(compiled) == 5  # (3, 4), (2, 4), float64, transposed, (4, 3)


def test_requires_grad_and_grad_mode_choose_the_plan():
    weight = mg.randn(4, requires_grad=True)
    compiled = mg.compile(lambda x: (x * weight).exp().sum())
    x = mg.randn(4)
    with mg.no_grad():
        out = compiled(x)
    assert out.grad_fn is None
    out = compiled(x)  # grad mode: a plan whose output carries the graph
    out.backward()
    assert_bits_equal(weight.grad.array, (x.array * np.exp(x.array * weight.array)))
    assert _plans(compiled) == 2


def test_the_kernel_mode_chooses_the_plan():
    compiled = mg.compile(lambda x: x.softmax(-1))
    x = mg.randn(64, 256)
    for mode in ("numpy", "numba", "numpy"):
        with kernels.mode(mode):
            assert_bits_equal(compiled(x).array, x.softmax(-1).array)
    assert _plans(compiled) == 2


def test_the_training_flag_and_a_dropout_probability_choose_the_plan():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    compiled = mg.compile(model)
    x = mg.randn(8, 4)
    with mg.no_grad():
        for training, p in ((True, 0.5), (False, 0.5), (True, 0.25), (True, 0.5)):
            model.train(training)
            model[1].p = p
            state = mg.get_rng_state()
            out = compiled(x)
            mg.set_rng_state(state)
            assert_bits_equal(out.array, model(x).array)
    assert _plans(compiled) == 3


def test_a_parameter_replaced_or_reshaped_is_read_again():
    mg.manual_seed(0)
    model = nn.Linear(3, 2)
    compiled = mg.compile(model)
    x = mg.randn(5, 3)
    with mg.no_grad():
        compiled(x)
        model.weight = nn.Parameter(mg.randn(2, 3))  # another tensor of the same shape
        assert_bits_equal(compiled(x).array, model(x).array)
        model.weight.array = np.ones((2, 3), np.float32)  # another array in the same one
        assert_bits_equal(compiled(x).array, model(x).array)
        model.weight = nn.Parameter(mg.randn(4, 3))
        model.bias = nn.Parameter(mg.randn(4))
        assert_bits_equal(compiled(x).array, model(x).array)
    assert _plans(compiled) == 3


def test_whether_a_gradient_is_none_chooses_the_plan():
    weight = mg.randn(3, requires_grad=True)

    def accumulate(x):
        (x * weight).sum().backward()
        return weight.grad

    compiled = mg.compile(accumulate)
    x = mg.randn(3)
    assert_bits_equal(compiled(x).array, x.array)  # .grad was None: it becomes the gradient
    assert_bits_equal(compiled(x).array, 2 * x.array)  # then it accumulates
    assert_bits_equal(compiled(x).array, 3 * x.array)
    weight.grad = None
    assert_bits_equal(compiled(x).array, x.array)
    assert _plans(compiled) == 2


def test_arguments_that_share_memory_have_their_own_plan():
    def add_into(a, b):
        with mg.no_grad():
            a.add_(b)
            return a * b

    compiled = mg.compile(add_into)
    x, y = mg.ones(3), mg.full((3,), 2.0)
    assert_bits_equal(compiled(x, y).array, np.float32([6, 6, 6]))
    z = mg.ones(3)
    assert_bits_equal(compiled(z, z).array, np.float32([4, 4, 4]))  # z doubled, then squared
    assert_bits_equal(z.array, np.float32([2, 2, 2]))
    assert _plans(compiled) == 2


def test_two_views_of_one_array_are_not_one_tensor_passed_twice():
    compiled = mg.compile(lambda a, b: a * 10 + b)
    t = mg.arange(3.0)
    assert_bits_equal(compiled(t, t).array, np.array([0.0, 11.0, 22.0], np.float32))
    base = mg.arange(6.0)
    assert_bits_equal(compiled(base[:3], base[3:]).array,
                      np.array([3.0, 14.0, 25.0], np.float32))
    assert _plans(compiled) == 2


def _sgd_step(model, x, calls_train: bool = False):
    """A training step of `model` on `x` with SGD, as a function of no arguments that
    returns the loss; `calls_train`: it calls model.train() first."""
    optimizer = mg.optim.SGD(model.parameters(), lr=0.1)

    def step():
        if calls_train:
            model.train()
        optimizer.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        return loss

    return step


def test_freezing_a_parameter_after_the_capture_makes_a_new_plan():
    runs = []
    for compile_step in (False, True):
        mg.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 1))
        step = _sgd_step(model, mg.randn(4, 3))
        step = mg.compile(step) if compile_step else step
        losses = []
        for call in range(6):
            model[0].weight.requires_grad_(call not in (2, 3))  # frozen, then trained again
            losses.append(step().item())
            assert (model[0].weight.grad is None) == (call in (2, 3))  # zero_grad set it to None
        runs.append([np.array(losses), *(p.numpy().copy() for p in model.parameters())])
    for eager, compiled in zip(*runs, strict=True):
        assert_bits_equal(compiled, eager)


def test_a_replaced_submodule_function_or_tensor_attribute_makes_a_new_plan():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(3, 2)
            self.activation = F.relu
            self.temperature = mg.tensor(2.0)  # neither parameter nor buffer

        def forward(self, x):
            return self.activation(self.head(x)) / self.temperature

    mg.manual_seed(0)
    model = Net()
    compiled = mg.compile(model)
    x = mg.randn(4, 3)
    changes = [lambda: None, lambda: setattr(model, "head", nn.Linear(3, 2)),
               lambda: setattr(model, "activation", F.gelu),
               lambda: setattr(model, "temperature", mg.tensor(0.5))]
    for change in changes:
        change()
        with mg.no_grad():
            assert_bits_equal(compiled(x).array, model(x).array)
    assert _plans(compiled) == 4


def test_a_forward_hook_added_inside_the_model_after_the_capture_is_not_skipped():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    compiled = mg.compile(model)
    compiled(mg.randn(2, 3))
    seen = []
    model[1].register_forward_hook(lambda module, args, output: seen.append(output))
    with pytest.warns(RuntimeWarning, match="a forward hook of ReLU"):
        compiled(mg.randn(2, 3))
    assert len(seen) == 1


def test_tensors_in_namedtuples_and_dataclasses_are_arguments():
    Pair = namedtuple("Pair", "x y")

    @dataclasses.dataclass
    class Batch:
        x: mg.Tensor
        scale: float = 2.0

    compiled = mg.compile(lambda pair, batch: pair.x * pair.y + batch.x * batch.scale)
    batch = Batch(mg.ones(3))  # the same object each call, its tensor rebound
    for call in range(4):
        pair = Pair(mg.full((3,), float(call)), mg.full((3,), 2.0))
        batch.x = mg.full((3,), float(10 * call))
        assert_bits_equal(compiled(pair, batch).array, np.full(3, 22.0 * call, np.float32))
    assert _plans(compiled) == 1


def test_a_tensor_rebound_in_an_argument_objects_attribute_makes_a_new_plan():
    holder = types.SimpleNamespace(x=mg.ones(3))
    compiled = mg.compile(lambda holder, y: holder.x * y)
    y = mg.full((3,), 2.0)
    for call in range(3):
        holder.x = mg.full((3,), float(call))  # read by identity: a plan per tensor
        assert_bits_equal(compiled(holder, y).array, np.full(3, 2.0 * call, np.float32))
        assert_bits_equal(compiled(holder, y).array, np.full(3, 2.0 * call, np.float32))
    assert _plans(compiled) == 3


def test_train_called_inside_the_step_is_replayed_and_eval_outside_needs_no_new_plans():
    runs = []
    for compile_step in (False, True):
        mg.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Linear(8, 1))
        x = mg.randn(4, 3)
        step = _sgd_step(model, x, calls_train=True)
        step = mg.compile(step) if compile_step else step
        values = []
        for _epoch in range(CACHE_SIZE_LIMIT + 2):
            values += [step().item() for _ in range(2)]
            model.eval()  # an evaluation between epochs
            with mg.no_grad():
                values.append(model(x).sum().item())
        runs.append(np.array(values))
        if compile_step:  # training at the call (zero_grad reads no gradient: one plan
            assert _plans(step) == 2  # for the first call and the later), then not
    assert_bits_equal(runs[1], runs[0])


def test_lists_dicts_and_added_members_of_a_module_are_checked():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3)])
            self.scales = [1.0, 2.0]
            self.config = {"shift": 0.5}

        def forward(self, x):
            for layer, scale in zip(self.layers, self.scales):
                x = layer(x) * scale
            x = x + self.config["shift"]
            return x * self.temperature if hasattr(self, "temperature") else x

    mg.manual_seed(0)
    model = Net()
    compiled = mg.compile(model)
    x = mg.randn(4, 3)
    changes = [lambda: None, lambda: model.scales.__setitem__(0, 7.0),
               lambda: model.config.update(shift=-1.0), lambda: setattr(model, "temperature", 3.0),
               lambda: model.layers.append(nn.Linear(3, 3)), lambda: model.scales.append(0.5)]
    for change in changes:
        change()
        with mg.no_grad():
            assert_bits_equal(compiled(x).array, model(x).array)
    assert _plans(compiled) == len(changes)


def test_the_attributes_of_an_argument_object_are_checked():
    model = nn.Linear(3, 2)
    config = types.SimpleNamespace(scale=2.0, extras=[mg.ones(2)], layer=model)
    compiled = mg.compile(lambda x, c: x @ c.layer.weight.t() * c.scale + c.extras[0])
    x = mg.randn(4, 3)

    def expected():
        return (x @ model.weight.t() * config.scale + config.extras[0]).array

    changes = [lambda: None, lambda: setattr(config, "scale", 3.0),
               lambda: config.extras.__setitem__(0, mg.full((2,), 5.0)),
               lambda: setattr(model, "weight", nn.Parameter(mg.randn(2, 3)))]
    for change in changes:
        change()
        with mg.no_grad():
            assert_bits_equal(compiled(x, config).array, expected())
    assert _plans(compiled) == len(changes)


SCALE = 2.0  # a global number that compiled steps read


class _Settings:
    def __init__(self, scale: float):
        self.scale = scale


SETTINGS = types.SimpleNamespace(inner=_Settings(2.0))  # a global object they read into


def test_a_global_number_the_step_reads_chooses_the_plan():
    global SCALE
    compiled = mg.compile(lambda x: x * SCALE)
    x = mg.randn(3)
    try:
        for value in (2.0, 3.0, 2.0):
            SCALE = value
            assert_bits_equal(compiled(x).array, (x * value).array)
    finally:
        SCALE = 2.0
    assert _plans(compiled) == 2


def test_attribute_chains_the_step_reads_choose_the_plan():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 3)
            self.settings = _Settings(2.0)

        def forward(self, x, config):
            return (self.linear(x) * self.settings.scale * config.inner.scale
                    + SETTINGS.inner.scale)

    module = Scaled()
    config = types.SimpleNamespace(inner=_Settings(1.0))
    compiled = mg.compile(module)
    x = mg.randn(4, 3)
    changes = [lambda: None, lambda: setattr(module.settings, "scale", 5.0),
               lambda: setattr(config.inner, "scale", 7.0),
               lambda: setattr(SETTINGS.inner, "scale", 3.0),
               lambda: setattr(SETTINGS, "inner", _Settings(4.0))]
    try:
        for change in changes:
            change()
            with mg.no_grad():
                want = (module.linear(x) * module.settings.scale * config.inner.scale
                        + SETTINGS.inner.scale)
                assert_bits_equal(compiled(x, config).array, want.array)
    finally:
        SETTINGS.inner = _Settings(2.0)
    assert _plans(compiled) == len(changes)


def test_a_chain_read_through_a_local_alias_chooses_the_plan():
    holder = types.SimpleNamespace(settings=_Settings(2.0))

    def step(x, owner):
        settings = owner.settings  # set once: `settings.scale` is owner.settings.scale
        inner = SETTINGS.inner  # a global's attribute, through a local
        return x * settings.scale + inner.scale

    compiled = mg.compile(step)
    x = mg.randn(4)
    changes = [lambda: None, lambda: setattr(holder.settings, "scale", 5.0),
               lambda: setattr(SETTINGS.inner, "scale", 3.0),
               lambda: setattr(holder, "settings", _Settings(6.0))]
    try:
        for change in changes:
            change()
            want = x * holder.settings.scale + SETTINGS.inner.scale
            assert_bits_equal(compiled(x, holder).array, want.array)
    finally:
        SETTINGS.inner = _Settings(2.0)
    assert _plans(compiled) == len(changes)


def test_a_local_set_in_either_branch_is_not_taken_for_one_chain():
    from minigrad.compile.python_reads import chains_of

    def step(x, owner, flag):
        settings = owner.first if flag else owner.second
        return x * settings.scale

    assert ("local", "owner", ("second", "scale")) not in chains_of(step.__code__)


class _Mode(enum.Enum):
    DOUBLE = 2
    TRIPLE = 3


class _Activation:
    MODE = _Mode.DOUBLE  # a class attribute, read through instances
    FACTOR = np.float32(1.5)


ACTIVATION = F.relu  # a global function that compiled steps call


def test_class_attributes_enums_numpy_scalars_and_functions_the_step_reads_choose_the_plan():
    global ACTIVATION
    settings = _Activation()

    def step(x):
        return ACTIVATION(x * settings.MODE.value * settings.FACTOR)

    compiled = mg.compile(step)
    x = mg.randn(5)
    changes = [lambda: None, lambda: setattr(_Activation, "MODE", _Mode.TRIPLE),
               lambda: setattr(_Activation, "FACTOR", np.float32(-2.0)),
               lambda: globals().__setitem__("ACTIVATION", F.gelu),
               lambda: setattr(settings, "MODE", _Mode.DOUBLE)]  # shadows the class's
    try:
        for change in changes:
            change()
            assert_bits_equal(compiled(x).array, step(x).array)
    finally:
        _Activation.MODE, _Activation.FACTOR = _Mode.DOUBLE, np.float32(1.5)
        ACTIVATION = F.relu
    assert _plans(compiled) == len(changes)


def test_a_tracer_running_during_the_capture_goes_on_tracing():
    called = []

    def tracer(frame, event, arg):
        called.append(frame.f_code.co_name)

    def scaled(x):
        return x * SCALE

    sys.settrace(tracer)
    try:
        mg.compile(scaled)(mg.ones(2))
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)
    assert "scaled" in called


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="a POSIX signal")
def test_a_signal_handler_running_amid_a_capture_keeps_what_it_changes():
    stop = types.SimpleNamespace(requested=False)

    def handler(_number, _frame):
        stop.requested = not stop.requested  # a read and a change, not the step's

    def step(x):
        os.kill(os.getpid(), signal.SIGUSR1)  # handled while the step is captured
        return x * 2

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        mg.compile(step)(mg.ones(2))
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert stop.requested is True


class _ReverseGrad(mg.autograd.Function):
    """The identity forward; the gradient reversed and scaled by SCALE as it was then."""

    def forward(self, x):
        self.scale = SCALE  # a replay runs the forward again; the backward is recorded
        return x.copy()

    def backward(self, grad):
        return grad * -self.scale


def test_a_global_an_autograd_function_keeps_for_its_backward_chooses_the_plan():
    global SCALE
    weight = mg.ones(3, requires_grad=True)

    def step():
        weight.grad = None
        (_ReverseGrad.apply(weight) * 2).sum().backward()
        return weight.grad

    compiled = mg.compile(step, fullgraph=True)
    try:
        for value in (2.0, 5.0, 2.0):
            SCALE = value
            assert compiled().tolist() == [-2 * value] * 3
    finally:
        SCALE = 2.0
    assert _plans(compiled) == 2


class _Cursor:
    def __init__(self):
        self.position = 0


def _take(x, cursor):
    piece = x[cursor.position:cursor.position + 2]
    cursor.position += 2
    return piece


def test_an_object_the_step_makes_and_changes_is_not_a_guard():
    def step(x):
        cursor = _Cursor()  # new at every call: its attributes are nobody's state
        return _take(x, cursor) * _take(x, cursor)

    compiled = mg.compile(step, fullgraph=True)
    for start in (0.0, 1.0, 2.0):
        x = mg.arange(start, start + 4.0)
        assert_bits_equal(compiled(x).array, step(x).array)
    assert _plans(compiled) == 1


def test_a_broadcast_view_argument_is_captured():
    positions = mg.arange(5).expand(3, 5)  # read-only, as NumPy's broadcast views are
    embedding = nn.Embedding(5, 4)
    compiled = mg.compile(embedding, fullgraph=True)
    for _ in range(2):
        with mg.no_grad():
            assert_bits_equal(compiled(positions).array, embedding(positions).array)


def test_past_the_cache_size_limit_new_shapes_run_eagerly_with_one_warning():
    compiled = mg.compile(lambda x: x.exp() + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for size in range(1, CACHE_SIZE_LIMIT + 4):
            x = mg.randn(size)
            assert_bits_equal(compiled(x).array, (x.exp() + 1).array)
    assert _plans(compiled) == CACHE_SIZE_LIMIT
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "cache_size_limit" in messages[0]
    assert "<lambda> runs eagerly" in messages[0]


def test_dynamic_true_makes_a_plan_per_size():
    compiled = mg.compile(lambda x: F.relu(x).sum(), dynamic=True)
    for size in (2, 3, 2):
        x = mg.randn(size)
        assert_bits_equal(compiled(x).array, F.relu(x).sum().array)
    assert _plans(compiled) == 2


def test_a_python_or_numpy_number_argument_is_part_of_the_key():
    compiled = mg.compile(lambda x, scale: x * scale)
    x = mg.ones(2)
    for scale in (2.0, np.float32(2.0), 3.0, np.float32(2.0), 2.0):
        assert_bits_equal(compiled(x, scale).array, (x * scale).array)
    assert _plans(compiled) == 3


class _Probe(mg.autograd.Function):
    """The identity; its forward (which a replay runs) counts the watched arrays alive."""

    watched: list = []
    alive: list = []

    def forward(self, x):
        _Probe.alive.append(sum(ref() is not None for ref in _Probe.watched))
        return x.copy()

    def backward(self, grad):
        return grad


def _classifier_step():
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 5))
    optimizer = mg.optim.Adam(model.parameters(), lr=1e-2)

    def step(x, target):
        optimizer.zero_grad()
        # cross_entropy reads how many targets count (ignore_index): a guard after the
        # forward, which cannot move before the dropout's draws
        loss = F.cross_entropy(model(_Probe.apply(x)), target, ignore_index=0)
        loss.backward()
        optimizer.step()
        return loss

    return model, step


def test_zero_grad_in_a_compiled_step_frees_the_old_gradients_before_the_forward():
    import weakref

    model, step = _classifier_step()
    compiled = mg.compile(step, fullgraph=True)
    x, target = mg.randn(32, 8), mg.tensor(np.arange(32) % 5)
    for _ in range(4):  # captures (no gradients yet, then no Adam state), then replays
        _Probe.watched = [weakref.ref(p.grad.array) for p in model.parameters()
                          if p.grad is not None]
        _Probe.alive = []
        compiled(x, target)
    assert len(_Probe.watched) == 4 and _Probe.alive == [0]  # as zero_grad left them


def test_a_guard_failing_after_zero_grad_gives_the_eager_step():
    x = mg.randn(32, 8)
    targets = [np.arange(32) % 5] * 3 + [np.zeros(32, np.int64) + (np.arange(32) > 3)]
    runs = []
    for compiled in (False, True):  # the last target: another count of ignored targets
        model, step = _classifier_step()
        step = mg.compile(step, fullgraph=True) if compiled else step
        mg.manual_seed(1)  # the same dropout draws in both runs
        losses = [step(x, mg.tensor(target)).array for target in targets]
        runs.append((losses, [(p.array, p.grad.array) for p in model.parameters()]))
    (eager_losses, eager_state), (losses, state) = runs
    for got, want in zip(losses, eager_losses, strict=True):
        assert_bits_equal(got, want)
    for (p, g), (p_want, g_want) in zip(state, eager_state, strict=True):
        assert_bits_equal(p, p_want)
        assert_bits_equal(g, g_want)
