"""Dropout's mask on the CPU (minigrad/kernels/bernoulli_mask.py): SplitMix64's published
outputs, the Numba kernel against its twin bit for bit, the frequency of True, and what
the mask owes the generator (one word a mask: seeds and saved states replay it)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import random
from minigrad.kernels import mode
from minigrad.kernels.bernoulli_mask import (
    bernoulli_mask,
    bernoulli_mask_twin,
    splitmix64_words,
)
from minigrad.kernels.dispatch import cpu_kernels

# SplitMix64 started at 1234567: its first five outputs, as published with the algorithm's
# reference implementation (and used as a test vector by the xoshiro family's seeders)
PUBLISHED = [6457827717110365317, 3203168211198807973, 9817491932198370423,
             4593380528125082431, 16408922859458223821]

kernels = cpu_kernels("bernoulli_mask")
needs_numba = pytest.mark.skipif(kernels is None, reason="Numba does not import")


def test_the_words_are_splitmix64s_published_outputs():
    assert splitmix64_words(1234567, 5).tolist() == PUBLISHED


def test_the_twin_takes_the_low_half_of_each_word_first():
    threshold = 2**31
    halves = [half for word in PUBLISHED for half in (word & 0xFFFFFFFF, word >> 32)]
    mask = bernoulli_mask_twin(1234567, 9, threshold)
    assert mask.tolist() == [half < threshold for half in halves[:9]]


@needs_numba
@settings(max_examples=80, deadline=None)
@given(key=st.integers(0, 2**64 - 1), count=st.integers(1, 300),
       threshold=st.one_of(st.sampled_from([0, 1, 2**31, 2**32 - 1]),
                           st.integers(0, 2**32 - 1)))
def test_the_kernel_gives_the_twins_mask(key, count, threshold):
    out = np.empty(count, np.bool_)
    kernels.fill_mask(np.uint64(key), np.uint32(threshold), out)
    np.testing.assert_array_equal(out, bernoulli_mask_twin(key, count, threshold))


@needs_numba
def test_the_dispatcher_gives_the_same_mask_in_every_kernel_mode():
    masks = []
    for kernel_mode in ("numpy", "numba", "auto"):
        with mode(kernel_mode):
            masks.append(bernoulli_mask(987654321, 4097, 3 * 2**30))
    for mask in masks[1:]:
        np.testing.assert_array_equal(mask, masks[0])


@pytest.mark.parametrize("probability", [0.1, 0.5, 0.9])
def test_the_share_of_true_is_the_probability(probability):
    count = 1 << 18
    mask = bernoulli_mask(42, count, round(probability * 2**32))
    spread = 5 * np.sqrt(probability * (1 - probability) / count)  # five sigma
    assert abs(mask.mean() - probability) < spread
    # both halves of the words, and neighbouring elements, are independent draws
    for part in (mask[0::2], mask[1::2]):
        assert abs(part.mean() - probability) < 2 * spread
    both = (mask[:-1] & mask[1:]).mean()
    assert abs(both - probability**2) < 2 * spread


def test_a_threshold_of_zero_is_all_false_and_the_largest_nearly_all_true():
    assert not bernoulli_mask(7, 1000, 0).any()
    assert bernoulli_mask(7, 1000, 2**32 - 1).all()


def test_each_mask_takes_one_word_of_the_generator_and_a_seed_replays_them():
    mg.manual_seed(5)
    first = random.bernoulli((4, 33), 0.5, "cpu")
    second = random.bernoulli((4, 33), 0.5, "cpu")
    assert first.shape == (4, 33) and first.dtype == np.bool_
    assert not np.array_equal(first, second)
    mg.manual_seed(5)
    state = mg.get_rng_state()
    np.testing.assert_array_equal(random.bernoulli((4, 33), 0.5, "cpu"), first)
    mg.set_rng_state(state)
    np.testing.assert_array_equal(random.bernoulli((4, 33), 0.5, "cpu"), first)
    mg.manual_seed(5)
    random.bernoulli((1,), 0.5, "cpu")  # a mask of any size takes one word
    np.testing.assert_array_equal(random.bernoulli((4, 33), 0.5, "cpu"), second)
