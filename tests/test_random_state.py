"""mg.get_rng_state / mg.set_rng_state: the state of both generators (CPU and GPU) in a
JSON-able dict, restored exactly, and refused with a ValueError naming the part that is
wrong (restoring nothing). The GPU draws themselves are checked in test_gpu_plumbing.py."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import minigrad as mg


def test_the_state_covers_both_generators_and_is_json():
    mg.manual_seed(7)
    state = mg.get_rng_state()
    assert set(state) == {"cpu", "gpu"}
    assert state["gpu"] == {"seed": 7, "draws": 0}
    assert json.loads(json.dumps(state)) == state


def test_restoring_repeats_the_cpu_draws_exactly():
    mg.manual_seed(3)
    mg.rand(5)
    state = mg.get_rng_state()
    expected = [mg.rand(4).numpy(), mg.randn(3).numpy(), mg.randint(0, 9, (6,)).numpy()]
    mg.manual_seed(4)
    mg.set_rng_state(state)
    again = [mg.rand(4).numpy(), mg.randn(3).numpy(), mg.randint(0, 9, (6,)).numpy()]
    for got, want in zip(again, expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_bare_numpy_state_restores_the_cpu_generator_only():
    mg.manual_seed(11)
    cpu_state = mg.get_rng_state()["cpu"]
    expected = mg.rand(3).numpy()
    mg.manual_seed(12)
    mg.set_rng_state(cpu_state)
    np.testing.assert_array_equal(mg.rand(3).numpy(), expected)
    assert mg.get_rng_state()["gpu"] == {"seed": 12, "draws": 0}


def _corrupt(path: tuple, value):
    mg.manual_seed(0)
    state = copy.deepcopy(mg.get_rng_state())
    target = state
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return state


@pytest.mark.parametrize("state, named", [
    ([1, 2], "dict"),
    ({"gpu": {"seed": 0, "draws": 0}}, "'cpu'"),
    (_corrupt(("extra",), 1), "extra"),
    (_corrupt(("cpu", "bit_generator"), "MT19937"), "PCG64"),
    (_corrupt(("cpu", "state"), KeyError), "'cpu'"),
    (_corrupt(("cpu", "state", "inc"), "x"), "'cpu'"),
    (_corrupt(("gpu",), [0, 0]), "'gpu'"),
    (_corrupt(("gpu", "draws"), KeyError), "'gpu'"),
    (_corrupt(("gpu", "seed"), -1), "'gpu' seed"),
    (_corrupt(("gpu", "draws"), 2.0), "'gpu' draws"),
    (_corrupt(("gpu", "draws"), True), "'gpu' draws"),
])
def test_a_wrong_state_raises_value_error_naming_the_part_and_restores_nothing(state, named):
    mg.manual_seed(5)
    before = mg.get_rng_state()
    with pytest.raises(ValueError, match="set_rng_state") as info:
        mg.set_rng_state(state)
    assert named in str(info.value)
    assert mg.get_rng_state() == before


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_manual_seed_takes_integers_from_zero_up(seed):
    with pytest.raises(ValueError, match="manual_seed"):
        mg.manual_seed(seed)
    mg.manual_seed(np.int64(2))  # NumPy integers are integers
