"""State round trips. A model's, an optimizer's or a learning-rate schedule's state_dict,
saved with mg.save and loaded into a twin built afresh (from another seed, with other
lrs, at epoch 0) at some point of the original's life, gives back every tensor bit for
bit and every hyperparameter; the twin then continues exactly as the original does: the
same outputs, the same parameter updates and the same learning rates, step after step,
up to the same error past the end of a OneCycle. Tensors live on MINIGRAD_TEST_DEVICE."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import test_device
from state_compare import assert_identical

import minigrad as mg
from minigrad import nn, optim
from minigrad.optim import lr_scheduler
from models import Transformer

pytestmark = pytest.mark.device
DEVICE = test_device()
FOLLOWING_STEPS = 6  # steps the original and its twin take side by side after loading


def _through_a_checkpoint(state, tmp_path):
    """`state` written by mg.save and read back by mg.load, as a resumed run gets it."""
    path = tmp_path / f"state_{next(_file_numbers)}.safetensors"
    mg.save(state, path)
    return mg.load(path)


_file_numbers = itertools.count()


# ----------------------------------------------------------------------------- models


class _Norms(nn.Module):
    """Embedding (with a padding row), LayerNorm, GroupNorm, RMSNorm, dropout and a Linear
    without bias."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8, padding_idx=0)
        self.layer_norm = nn.LayerNorm(8)
        self.group_norm = nn.GroupNorm(2, 8)
        self.rms_norm = nn.RMSNorm(8)
        self.dropout = nn.Dropout(0.2)
        self.head = nn.Linear(8, 3, bias=False)

    def forward(self, ids):
        x = self.layer_norm(self.embed(ids))
        x = self.group_norm(x.transpose(1, 2)).transpose(1, 2)
        return self.head(self.dropout(self.rms_norm(x)))


MODELS = {
    "transformer": (
        lambda: Transformer(11, 13, d_model=16, nhead=2, num_encoder_layers=1,
                            num_decoder_layers=2, dim_feedforward=24, dropout=0.1,
                            tie_target_embeddings=True, max_len=8),
        lambda: (mg.tensor([[3, 4, 5, 0], [6, 7, 8, 9]], device=DEVICE),
                 mg.tensor([[1, 3, 4, 0], [1, 6, 12, 7]], device=DEVICE))),
    "convolutions and batch norm": (
        lambda: nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.3),
                              nn.Linear(16, 3)),
        lambda: (mg.randn(5, 2, 4, 4, device=DEVICE),)),
    "embedding and norms in float64": (
        lambda: _Norms().to(mg.float64),
        lambda: (mg.tensor([[1, 2, 0], [4, 5, 6]], device=DEVICE),)),
}


def _trained(name: str, seed: int, steps: int):
    """The model built from `seed`, after `steps` Adam steps in training mode (which also
    move batch norm's running statistics and count)."""
    build, inputs = MODELS[name]
    mg.manual_seed(seed)
    model = build().to(DEVICE)
    adam = optim.Adam(model.parameters(), lr=0.01)
    for _ in range(steps):
        model(*inputs()).square().mean().backward()
        adam.step()
        adam.zero_grad()
    return model, inputs()


def _outputs(model, inputs, train: bool) -> bytes:
    model.train(train)
    mg.manual_seed(7)  # the same dropout masks for the original and the twin
    with mg.no_grad():
        return model(*inputs).numpy().tobytes()


@pytest.mark.parametrize("name", list(MODELS))
def test_a_model_loads_every_tensor_bit_for_bit_and_computes_the_same(name, tmp_path):
    model, inputs = _trained(name, seed=0, steps=2)
    twin, _ = _trained(name, seed=1, steps=0)
    state = model.state_dict()
    with mg.no_grad():  # move every tensor off, constant buffers too: only loading restores
        for value in twin.state_dict().values():
            value.add_(1)
    for key, value in twin.state_dict().items():
        assert value.numpy().tobytes() != state[key].numpy().tobytes(), key
    twin.load_state_dict(_through_a_checkpoint(state, tmp_path))
    assert_identical(twin.state_dict(), state)
    for train in (False, True):
        assert _outputs(twin, inputs, train) == _outputs(model, inputs, train)


# ----------------------------------------------------------------------------- optimizers


OPTIMIZERS = {
    "SGD": lambda groups: optim.SGD(groups, lr=0.05),
    "SGD with momentum, dampening and weight decay": lambda groups: optim.SGD(
        groups, lr=0.05, momentum=0.9, dampening=0.2, weight_decay=1e-2),
    "SGD with Nesterov momentum": lambda groups: optim.SGD(
        groups, lr=0.05, momentum=0.8, nesterov=True, weight_decay=1e-3),
    "Adam": lambda groups: optim.Adam(groups, lr=0.01, betas=(0.8, 0.99), eps=1e-6,
                                      weight_decay=1e-3),
    "Adam amsgrad": lambda groups: optim.Adam(groups, lr=0.01, amsgrad=True),
    "AdamW": lambda groups: optim.AdamW(groups, lr=0.01, weight_decay=0.1),
    "AdamW amsgrad": lambda groups: optim.AdamW(groups, lr=0.01, betas=(0.5, 0.9),
                                                amsgrad=True),
    "Adadelta": lambda groups: optim.Adadelta(groups, lr=0.5, weight_decay=1e-2),
    "Adagrad": lambda groups: optim.Adagrad(groups, lr=0.05, lr_decay=0.1,
                                            initial_accumulator_value=0.1),
    "RMSprop centered with momentum": lambda groups: optim.RMSprop(
        groups, lr=0.01, momentum=0.9, centered=True, weight_decay=1e-3),
    "Adamax": lambda groups: optim.Adamax(groups, lr=0.01, maximize=True),
    "NAdam": lambda groups: optim.NAdam(groups, lr=0.01, weight_decay=0.1,
                                        decoupled_weight_decay=True),
    "RAdam": lambda groups: optim.RAdam(groups, lr=0.01, betas=(0.9, 0.99),
                                        weight_decay=1e-2),
}
# optimizers that, as PyTorch's, hold state for every parameter from the start
STATE_FROM_THE_START = {"Adagrad"}
SHAPES = ((2, 3), (3,), (4,), (2, 2))  # the last never gets a gradient, so it has no state


def _parameters(seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [nn.Parameter(mg.tensor(rng.standard_normal(shape).astype(np.float32),
                                   device=DEVICE)) for shape in SHAPES]


def _groups(params: list) -> list:
    """Two param groups, the second with its own lr."""
    return [{"params": params[:2]}, {"params": params[2:], "lr": 0.003}]


def _copies(params: list) -> list:
    return [nn.Parameter(param.detach().clone()) for param in params]


def _take_steps(optimizer, params: list, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        for param in params[:-1]:
            param.grad = mg.tensor(rng.standard_normal(param.shape).astype(np.float32),
                                   device=DEVICE)
        optimizer.step()


@pytest.mark.parametrize("steps_before", [0, 1, 4])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_an_optimizer_loads_every_state_tensor_and_hyperparameter(name, steps_before,
                                                                  tmp_path):
    make = OPTIMIZERS[name]
    params = _parameters(seed=0)
    optimizer = make(_groups(params))
    _take_steps(optimizer, params, steps_before, seed=0)
    state = optimizer.state_dict()  # PyTorch's layout: parameters by index across groups
    assert [group["params"] for group in state["param_groups"]] == [[0, 1], [2, 3]]
    if name in STATE_FROM_THE_START:
        assert sorted(state["state"]) == [0, 1, 2, 3]
    else:
        assert sorted(state["state"]) == ([] if steps_before == 0 or name == "SGD"
                                          else [0, 1, 2])
    twin_params = _copies(params)
    twin = make(_groups(twin_params))
    for group in twin.param_groups:
        group["lr"] *= 3  # only the loaded state can set it back
    twin.load_state_dict(_through_a_checkpoint(optimizer.state_dict(), tmp_path))
    assert_identical(twin.state_dict(), optimizer.state_dict())
    for step in range(FOLLOWING_STEPS):
        _take_steps(optimizer, params, 1, seed=100 + step)
        _take_steps(twin, twin_params, 1, seed=100 + step)
        for param, twin_param in zip(params, twin_params, strict=True):
            assert twin_param.numpy().tobytes() == param.numpy().tobytes()
    assert_identical(twin.state_dict(), optimizer.state_dict())


# ----------------------------------------------------------------------------- schedules


def _sgd(params):
    return optim.SGD(_groups(params), lr=0.1, momentum=0.9)


def _adam(params):
    return optim.Adam(_groups(params), lr=0.1)


def _warmup_then_cosine(o):
    return lr_scheduler.SequentialLR(o, [lr_scheduler.LinearLR(o, 0.2, 1.0, 3),
                                         lr_scheduler.CosineAnnealingLR(o, 5, 1e-3)], [3])


# name: (optimizer, schedule, steps taken before the state is saved: the fresh schedule,
# mid-run, and the turns of its life: a milestone, a restart, the end of a cycle)
SCHEDULES = {
    "LambdaLR": (_sgd, lambda o: lr_scheduler.LambdaLR(o, [lambda e: 0.9**e,
                                                           lambda e: 1 / (e + 1)]), (0, 3)),
    "StepLR": (_sgd, lambda o: lr_scheduler.StepLR(o, 3, 0.5), (0, 2, 3, 7)),
    "LinearLR, past its last iteration": (
        _sgd, lambda o: lr_scheduler.LinearLR(o, 0.2, 0.9, 4), (0, 2, 4, 6)),
    "CosineAnnealingLR, rising again past T_max": (
        _sgd, lambda o: lr_scheduler.CosineAnnealingLR(o, 5, 1e-3), (0, 2, 5, 8)),
    "NoamLR": (_adam, lambda o: lr_scheduler.NoamLR(o, d_model=16, warmup_steps=4),
               (0, 2, 4, 9)),
    "OneCycleLR, three phases, momentum": (
        _sgd, lambda o: lr_scheduler.OneCycleLR(o, [0.4, 0.1], total_steps=12,
                                                three_phase=True), (0, 4, 9, 11, 12)),
    "OneCycleLR, linear, Adam's beta1": (
        _adam, lambda o: lr_scheduler.OneCycleLR(o, 0.3, total_steps=8,
                                                 anneal_strategy="linear"), (0, 3, 8)),
    "SequentialLR, at and after its restart": (_sgd, _warmup_then_cosine, (0, 2, 3, 4, 9)),
}


def _step_both(original, twin) -> None:
    """One step of each (optimizer, then schedule), which must succeed or fail alike."""
    outcomes = []
    for optimizer, scheduler in (original, twin):
        optimizer.step()
        try:
            scheduler.step()
            outcomes.append(None)
        except ValueError as exc:  # OneCycleLR past total_steps
            outcomes.append(str(exc))
    assert outcomes[1] == outcomes[0]


def _assert_same_schedule(twin, original) -> None:
    (twin_optimizer, twin_scheduler), (optimizer, scheduler) = twin, original
    assert_identical(twin_scheduler.state_dict(), scheduler.state_dict())
    assert_identical(twin_optimizer.state_dict(), optimizer.state_dict())
    assert twin_scheduler.get_last_lr() == scheduler.get_last_lr()


def _give_gradients(params: list, step: int) -> None:
    for param in params:
        param.grad = mg.full(param.shape, 0.1 * (step + 1), device=DEVICE)


def _run_side_by_side(original, twin, twin_params, params) -> None:
    _assert_same_schedule(twin, original)
    for step in range(FOLLOWING_STEPS):
        _give_gradients(params, step)
        _give_gradients(twin_params, step)
        _step_both(original, twin)
        _assert_same_schedule(twin, original)
        for param, twin_param in zip(params, twin_params, strict=True):
            assert twin_param.numpy().tobytes() == param.numpy().tobytes()


@pytest.mark.parametrize("name, steps_before",
                         [(name, steps) for name, (_, _, points) in SCHEDULES.items()
                          for steps in points])
def test_a_schedule_resumed_from_its_state_continues_identically(name, steps_before,
                                                                 tmp_path):
    make_optimizer, make_schedule, _ = SCHEDULES[name]
    params = _parameters(seed=0)
    optimizer = make_optimizer(params)
    scheduler = make_schedule(optimizer)
    for step in range(steps_before):
        _give_gradients(params, step)
        optimizer.step()
        scheduler.step()
    saved = _through_a_checkpoint({"optimizer": optimizer.state_dict(),
                                   "scheduler": scheduler.state_dict()}, tmp_path)
    twin_params = _copies(params)  # the model's weights, which its own state_dict restores
    twin_optimizer = make_optimizer(twin_params)
    twin = make_schedule(twin_optimizer)
    twin_optimizer.load_state_dict(saved["optimizer"])
    twin.load_state_dict(saved["scheduler"])
    _run_side_by_side((optimizer, scheduler), (twin_optimizer, twin), twin_params, params)


PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85, 0.85, 0.7]


def _plateau(optimizer, mode: str):
    return lr_scheduler.ReduceLROnPlateau(optimizer, mode=mode, factor=0.5, patience=1,
                                          cooldown=2, min_lr=[0.01, 0.0])


@pytest.mark.parametrize("mode", ["min", "max"])
def test_reduce_on_plateau_resumes_from_every_point_of_its_life(mode, tmp_path):
    """Fresh (best is +-inf), improving, just after a reduction (in its cooldown), and
    after its cooldown; each point's state loads into a fresh twin that then sees the
    same metrics and lowers the lr at the same steps."""
    sign = 1.0 if mode == "min" else -1.0
    metrics = [sign * metric for metric in PLATEAU_METRICS]
    seen = set()
    for steps_before in range(len(metrics) - FOLLOWING_STEPS):
        params, twin_params = _parameters(seed=0), _parameters(seed=0)
        optimizer = _sgd(params)
        scheduler = _plateau(optimizer, mode)
        for metric in metrics[:steps_before]:
            optimizer.step()
            scheduler.step(metric)
        seen.add((scheduler.in_cooldown, scheduler.get_last_lr() != [0.1, 0.003]))
        saved = _through_a_checkpoint({"optimizer": optimizer.state_dict(),
                                       "scheduler": scheduler.state_dict()}, tmp_path)
        twin_optimizer = _sgd(twin_params)
        twin = _plateau(twin_optimizer, mode)
        twin_optimizer.load_state_dict(saved["optimizer"])
        twin.load_state_dict(saved["scheduler"])
        _assert_same_schedule((twin_optimizer, twin), (optimizer, scheduler))
        for metric in metrics[steps_before:steps_before + FOLLOWING_STEPS]:
            optimizer.step()
            twin_optimizer.step()
            scheduler.step(metric)
            twin.step(metric)
            _assert_same_schedule((twin_optimizer, twin), (optimizer, scheduler))
    # fresh, reduced and in cooldown, reduced and out of it
    assert {(False, False), (True, True), (False, True)} <= seen
