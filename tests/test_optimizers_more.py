"""Adadelta, Adagrad, RMSprop, Adamax, NAdam and RAdam against PyTorch's: 100 steps side by
side on random parameters and gradients (two param groups, one parameter that gets a
gradient only every other step), in float32 and float64; the same defaults, argument
checks and state_dict layout; a PyTorch state dict, its tensors turned into NumPy arrays,
loads and continues as PyTorch does. Exact resumption from minigrad's own state dict is
in test_state_round_trips.py. Our parameters live on MINIGRAD_TEST_DEVICE."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import test_device

import minigrad as mg
from minigrad import nn, optim

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.device
DEVICE = test_device()
STEPS = 100
SHAPES = ((3, 4), (5,), (2, 3))  # the last gets a gradient on even steps only
# each step's update agrees to a few units of roundoff (the two libraries round the same
# formula in a different order); the parameters, sums of 100 updates, to 1e-5 in
# float32 and 1e-12 in float64, relative to the largest parameter entry
RTOL = {np.float32: 1e-5, np.float64: 1e-12}
NAMES = ("Adadelta", "Adagrad", "RMSprop", "Adamax", "NAdam", "RAdam")

# name -> hyperparameter settings (the second group takes half the first's lr)
SETTINGS = {
    "Adadelta": [{}, {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.1},
                 {"maximize": True, "rho": 0.95}],
    "Adagrad": [{}, {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.05,
                     "initial_accumulator_value": 0.2, "eps": 1e-8},
                {"maximize": True}],
    "RMSprop": [{}, {"centered": True}, {"momentum": 0.9, "alpha": 0.9},
                {"centered": True, "momentum": 0.5, "weight_decay": 0.1, "eps": 1e-6},
                {"maximize": True, "lr": 1e-3}],
    "Adamax": [{}, {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1},
               {"betas": (0.3, 0.9), "maximize": True}],
    "NAdam": [{}, {"lr": 0.01, "momentum_decay": 0.01, "weight_decay": 0.1},
              {"weight_decay": 0.1, "decoupled_weight_decay": True, "betas": (0.8, 0.99)},
              {"maximize": True, "eps": 1e-6}],
    "RAdam": [{}, {"lr": 0.01, "weight_decay": 0.1, "betas": (0.9, 0.99)},
              {"weight_decay": 0.1, "decoupled_weight_decay": True},
              {"maximize": True, "betas": (0.5, 0.9)}],
}
CASES = [(name, settings) for name in NAMES for settings in SETTINGS[name]]


class _Pair:
    """The same parameters and optimizer in minigrad and in PyTorch."""

    def __init__(self, name: str, settings: dict, dtype, arrays: list | None = None):
        if arrays is None:
            rng = np.random.default_rng(0)
            arrays = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
        self.ours = [nn.Parameter(mg.tensor(a, device=DEVICE)) for a in arrays]
        self.theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
        self.optimizer = getattr(optim, name)(_groups(self.ours, settings), **settings)
        self.torch_optimizer = getattr(torch.optim, name)(_groups(self.theirs, settings),
                                                          **settings)
        self.dtype = dtype

    def step(self, rng: np.random.Generator, step: int) -> None:
        for index, (ours, theirs) in enumerate(zip(self.ours, self.theirs, strict=True)):
            if index == len(SHAPES) - 1 and step % 2:
                ours.grad = theirs.grad = None
                continue
            grad = (rng.standard_normal(ours.shape) * rng.uniform(0.1, 3)).astype(self.dtype)
            ours.grad = mg.tensor(grad, device=DEVICE)
            theirs.grad = torch.tensor(grad)
        self.optimizer.step()
        self.torch_optimizer.step()

    def assert_close(self, where: str) -> None:
        for ours, theirs in zip(self.ours, self.theirs, strict=True):
            expected = theirs.detach().numpy()
            scale = np.abs(expected).max()
            np.testing.assert_allclose(ours.numpy(), expected, rtol=0,
                                       atol=RTOL[self.dtype] * scale, err_msg=where)


def _groups(params: list, settings: dict) -> list:
    lr = settings.get("lr", 0.01)
    return [{"params": params[:2]}, {"params": params[2:], "lr": lr / 2}]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, settings", CASES)
def test_every_step_matches_pytorch(name, settings, dtype):
    default_dtype = torch.get_default_dtype()
    # PyTorch keeps NAdam's mu_product in the default dtype: float64 for a float64 run
    torch.set_default_dtype(torch.float64 if dtype == np.float64 else torch.float32)
    try:
        pair = _Pair(name, settings, dtype)
        rng = np.random.default_rng(1)
        for step in range(STEPS):
            pair.step(rng, step)
            pair.assert_close(f"{name}({settings}) after step {step + 1}")
    finally:
        torch.set_default_dtype(default_dtype)
    expected_dtype = mg.float64 if dtype == np.float64 else mg.float32
    assert all(param.dtype == expected_dtype for param in pair.ours)


def _as_numpy(value):
    return value.numpy() if isinstance(value, torch.Tensor) else value


def _ported(torch_state: dict) -> dict:
    """A PyTorch optimizer's state dict as a user ports it: every tensor a NumPy array."""
    return {"state": {index: {name: _as_numpy(value) for name, value in entries.items()}
                      for index, entries in torch_state["state"].items()},
            "param_groups": [dict(group) for group in torch_state["param_groups"]]}


@pytest.mark.parametrize("name, settings", CASES)
def test_the_state_dict_has_pytorchs_layout_and_a_ported_one_continues_alike(name,
                                                                             settings):
    pair = _Pair(name, settings, np.float32)
    rng = np.random.default_rng(2)
    for step in range(7):
        pair.step(rng, step)
    ours, theirs = pair.optimizer.state_dict(), pair.torch_optimizer.state_dict()
    assert [list(group) for group in ours["param_groups"]] == \
           [list(group) for group in theirs["param_groups"]]
    assert ours["param_groups"] == theirs["param_groups"]
    assert list(ours["state"]) == list(theirs["state"])
    for index, entries in theirs["state"].items():
        assert list(ours["state"][index]) == list(entries)
        assert ours["state"][index]["step"] == int(entries["step"])

    # fresh optimizers on PyTorch's current weights, each loading PyTorch's state
    ported = _Pair(name, settings, np.float32,
                   arrays=[param.detach().numpy().copy() for param in pair.theirs])
    ported.optimizer.load_state_dict(_ported(theirs))
    ported.torch_optimizer.load_state_dict(theirs)
    for step in range(7, 30):
        ported.step(rng, step)
        ported.assert_close(f"{name}({settings}) ported, after step {step + 1}")


@pytest.mark.parametrize("name", NAMES)
def test_the_defaults_are_pytorchs(name):
    params = [nn.Parameter(mg.zeros(2))]
    ours = getattr(optim, name)(params)
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))])
    assert list(ours.defaults) == list(theirs.defaults)
    assert ours.defaults == theirs.defaults


BAD_ARGUMENTS = {
    "Adadelta": [{"lr": -1}, {"lr": math.nan}, {"rho": 1.5}, {"rho": -0.1}, {"eps": -1e-6},
                 {"weight_decay": -0.1}],
    "Adagrad": [{"lr": -0.5}, {"lr_decay": -1}, {"weight_decay": -1e-3},
                {"initial_accumulator_value": -0.1}, {"eps": -1.0}],
    "RMSprop": [{"lr": -1}, {"eps": -1e-8}, {"momentum": -0.9}, {"weight_decay": -1},
                {"alpha": -0.99}],
    "Adamax": [{"lr": -1}, {"eps": -1}, {"betas": (1.0, 0.9)}, {"betas": (0.9, -0.1)},
               {"weight_decay": -1}],
    "NAdam": [{"lr": -1}, {"eps": -1}, {"betas": (-0.1, 0.9)}, {"betas": (0.9, 1.0)},
              {"weight_decay": -1}, {"momentum_decay": -4e-3}],
    "RAdam": [{"lr": -1}, {"eps": -1}, {"betas": (1.5, 0.9)}, {"betas": (0.9, 2.0)},
              {"weight_decay": -1}],
}


@pytest.mark.parametrize("name, bad", [(name, bad) for name in NAMES
                                       for bad in BAD_ARGUMENTS[name]])
def test_bad_hyperparameters_raise_pytorchs_value_error(name, bad):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **bad)
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([nn.Parameter(mg.zeros(2))], **bad)
    assert str(ours.value) == f"{name}: {theirs.value}"


@pytest.mark.parametrize("name", NAMES)
def test_differentiable_steps_are_refused_and_implementation_choices_change_nothing(name):
    with pytest.raises(NotImplementedError, match=f"{name}: differentiable=True is not"):
        getattr(optim, name)([nn.Parameter(mg.zeros(2))], differentiable=True)
    choices = {"Adagrad": {"foreach": True, "fused": True}}.get(name, {"foreach": True,
                                                                       "capturable": True})
    runs = []
    for options in ({}, choices):
        param = nn.Parameter(mg.tensor([0.5, -1.5, 2.0], device=DEVICE))
        optimizer = getattr(optim, name)([param], **options)
        for step in range(3):
            param.grad = mg.tensor([0.3, -0.2, 0.1 * step], device=DEVICE)
            optimizer.step()
        runs.append(param.numpy().tobytes())
    assert runs[0] == runs[1]


def test_adagrad_holds_state_for_every_parameter_from_the_start():
    first, second = nn.Parameter(mg.zeros(2)), nn.Parameter(mg.zeros(3))
    adagrad = optim.Adagrad([first], initial_accumulator_value=0.5)
    adagrad.add_param_group({"params": [second], "initial_accumulator_value": 0.25})
    state = adagrad.state_dict()["state"]
    assert [state[i]["step"] for i in (0, 1)] == [0, 0]
    assert state[0]["sum"].tolist() == [0.5, 0.5]
    assert state[1]["sum"].tolist() == [0.25, 0.25, 0.25]


@pytest.mark.parametrize("bad_step, message", [(np.float32(2.5), "'step' must be an int"),
                                               (np.array([1.0, 2.0]), "'step' must be an")])
def test_a_ported_step_must_be_a_whole_number(bad_step, message):
    param = nn.Parameter(mg.zeros(2))
    nadam = optim.NAdam([param])
    param.grad = mg.ones(2)
    nadam.step()
    state = nadam.state_dict()
    state["state"][0] = dict(state["state"][0], step=np.asarray(bad_step))
    with pytest.raises(ValueError, match=message):
        nadam.load_state_dict(state)
