"""Random numbers as PyTorch scripts draw them: randint's two signatures, randperm,
mg.Generator (seeded streams of one's own, with state to save and restore), multinomial's
distribution with and without replacement, and mg.cuda.manual_seed."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import make_tensor

import minigrad as mg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("args, kwargs, low, high", [
    ((10, (3,)), {}, 0, 10),
    ((3, 10, (2, 2)), {}, 3, 10),
    ((5,), {"size": (4,)}, 0, 5),
    ((-2, 2), {"size": [6]}, -2, 2),
    ((), {"low": 1, "high": 4, "size": (5,)}, 1, 4),
    ((), {"high": 4, "size": (2, 1)}, 0, 4),
])
def test_randint_signatures_match_torch(args, kwargs, low, high):
    ours, theirs = mg.randint(*args, **kwargs), torch.randint(*args, **kwargs)
    assert ours.shape == tuple(theirs.shape) and ours.dtype is mg.int64
    assert ours.numpy().min() >= low and ours.numpy().max() < high


def test_randint_covers_its_range_and_takes_dtype_and_generator():
    draws = mg.randint(3, 7, (2000,)).numpy()
    assert set(np.unique(draws)) == {3, 4, 5, 6}
    assert mg.randint(4, (3,), dtype=mg.float32).dtype is mg.float32
    g1, g2 = mg.Generator().manual_seed(5), mg.Generator().manual_seed(5)
    assert mg.randint(100, (8,), generator=g1).tolist() == \
        mg.randint(100, (8,), generator=g2).tolist()


@pytest.mark.parametrize("call, error", [
    (lambda: mg.randint(5), "size=None"),
    (lambda: mg.randint(5, 3), "size=None"),
    (lambda: mg.randint(1, 2, 3, (4,)), "extra arguments \\[1\\]"),
])
def test_randint_misuse_says_what_is_expected(call, error):
    with pytest.raises(TypeError, match=error):
        call()


def test_randint_empty_range():
    with pytest.raises(RuntimeError, match="low < high"):
        mg.randint(4, 4, (2,))


def test_randperm_is_a_permutation_and_reproducible():
    for n in (0, 1, 7, 100):
        assert sorted(mg.randperm(n).tolist()) == list(range(n))
    assert mg.randperm(5).dtype is mg.int64 and mg.randperm(5, dtype=mg.float32).dtype is \
        mg.float32
    g = mg.Generator().manual_seed(3)
    first = mg.randperm(50, generator=g).tolist()
    assert mg.randperm(50, generator=g.manual_seed(3)).tolist() == first
    positions = np.array([mg.randperm(4).tolist().index(0) for _ in range(2000)])
    np.testing.assert_allclose(np.bincount(positions, minlength=4) / 2000, 0.25, atol=0.04)


def test_generator_streams_are_their_own():
    mg.manual_seed(0)
    expected = mg.rand(4).tolist()
    mg.manual_seed(0)
    g = mg.Generator().manual_seed(123)
    drawn = mg.randn(3, generator=g).tolist()
    assert mg.rand(4).tolist() == expected  # the default stream did not move
    assert mg.randn(3, generator=mg.Generator().manual_seed(123)).tolist() == drawn
    assert mg.randn(3, generator=mg.Generator().manual_seed(124)).tolist() != drawn


def test_generator_state_round_trip_and_seeds():
    g = mg.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed()
    assert g.manual_seed(7) is g and g.initial_seed() == 7
    mg.rand(3, generator=g)
    state = g.get_state()
    after = mg.rand(5, generator=g).tolist()
    assert g.set_state(state) is g
    assert mg.rand(5, generator=g).tolist() == after
    assert mg.Generator().set_state(state).initial_seed() == 7
    seed = g.seed()
    assert isinstance(seed, int) and g.initial_seed() == seed
    assert g.device == "cpu" and "initial_seed" in repr(g)


@pytest.mark.parametrize("call, exception, match", [
    (lambda: mg.Generator().manual_seed(-1), ValueError, "seed must be an integer >= 0"),
    (lambda: mg.Generator().manual_seed(1.5), ValueError, "seed must be an integer >= 0"),
    (lambda: mg.Generator().set_state({"seed": 1}), ValueError, "'seed' and 'pcg64'"),
    (lambda: mg.Generator().set_state({"seed": 1, "pcg64": {"bit_generator": "x"}}),
     ValueError, "invalid 'pcg64' state"),
    (lambda: mg.rand(2, generator=np.random.default_rng(0)), TypeError, "mg.Generator|Generator"),
])
def test_generator_misuse(call, exception, match):
    with pytest.raises(exception, match=match):
        call()


def test_every_random_function_takes_the_generator():
    def draws(g):
        x, y = mg.zeros(3), mg.zeros(3)
        return [mg.rand(2, generator=g).tolist(), mg.randn(2, generator=g).tolist(),
                mg.randint(9, (2,), generator=g).tolist(), mg.randperm(4, generator=g).tolist(),
                mg.multinomial(mg.ones(5), 2, generator=g).tolist(),
                x.normal_(1.0, 2.0, generator=g).tolist(),
                y.uniform_(-1.0, 1.0, generator=g).tolist()]

    assert draws(mg.Generator().manual_seed(9)) == draws(mg.Generator().manual_seed(9))
    assert draws(mg.Generator().manual_seed(9)) != draws(mg.Generator().manual_seed(10))


def test_cuda_manual_seed_leaves_the_cpu_stream_alone():
    mg.manual_seed(1)
    expected = mg.rand(3).tolist()
    mg.manual_seed(1)
    mg.cuda.manual_seed(99)
    mg.cuda.manual_seed_all(99)
    assert mg.rand(3).tolist() == expected


# ----------------------------------------------------------------------------- multinomial


@pytest.mark.device
def test_multinomial_with_replacement_follows_the_weights():
    weights = np.array([[1.0, 0.0, 6.0, 3.0], [0.0, 5.0, 0.0, 5.0]])  # unnormalised
    draws = mg.multinomial(make_tensor(weights), 20000, replacement=True,
                           generator=mg.Generator().manual_seed(0)).numpy()
    assert draws.shape == (2, 20000) and draws.dtype == np.int64
    for row, w in zip(draws, weights):
        frequencies = np.bincount(row, minlength=4) / row.size
        np.testing.assert_allclose(frequencies, w / w.sum(), atol=0.015)
        assert not np.isin(row, np.flatnonzero(w == 0)).any()  # weight 0: never drawn


@pytest.mark.device
def test_multinomial_without_replacement_draws_in_sequence():
    """P(first = i, second = j) = p_i * p_j / (1 - p_i): drawing one at a time."""
    p = np.array([0.5, 0.3, 0.2])
    draws = mg.multinomial(make_tensor(np.tile(p, (20000, 1))), 2,
                           generator=mg.Generator().manual_seed(1)).numpy()
    assert (draws[:, 0] != draws[:, 1]).all()
    for i, j in itertools.permutations(range(3), 2):
        frequency = np.mean((draws[:, 0] == i) & (draws[:, 1] == j))
        assert abs(frequency - p[i] * p[j] / (1 - p[i])) < 0.015, (i, j, frequency)


@pytest.mark.device
def test_multinomial_shapes_like_torch():
    vector = make_tensor(np.array([0.2, 0.0, 0.8]))
    one = mg.multinomial(vector, 1)
    assert one.shape == (1,) == tuple(torch.multinomial(torch.tensor([0.2, 0.0, 0.8]), 1).shape)
    both = vector.multinomial(2)
    assert sorted(both.tolist()) == [0, 2]  # without replacement: every positive category
