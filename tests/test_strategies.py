"""The shared strategies of tests/helpers.py reach the cases they promise: few examples of
one element, arrays whose values differ, and every operand layout made as named."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import OPERAND_LAYOUTS, arrays, draw_operands, shapes
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import minigrad as mg


def _draws(runs: int, draw) -> list:
    """draw(data) in `runs` seeded runs of 20 examples (an op test's budget)."""
    drawn = []
    for run in range(runs):
        @seed(run)
        @settings(max_examples=20, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(data=st.data())
        def collect(data):
            drawn.append(draw(data))

        collect()
    return drawn


def test_shapes_and_arrays_rarely_degenerate():
    """Measured over 20 windows of 20 seeded runs (400 examples each), which differ with
    the modules Hypothesis has seen imported: 2-5% hold one element (the 0-d shapes),
    under 1% are all zero, none of 2+ elements repeats a value, the median size is 3 or
    4 and the mean size 5.0-6.1. The bounds leave a margin over those ranges."""
    drawn = _draws(20, lambda data: data.draw(arrays(data.draw(shapes()))))
    sizes = np.array([a.size for a in drawn])
    assert np.mean(sizes <= 1) < 0.10
    assert np.mean([not a.any() for a in drawn]) < 0.03
    assert all(len(np.unique(a)) == a.size for a in drawn)
    assert np.median(sizes) >= 3
    assert np.mean(sizes) >= 4


@pytest.mark.parametrize("layout", OPERAND_LAYOUTS)
def test_operand_layouts_are_what_they_say(layout):
    @settings(max_examples=1, database=None, deadline=None)
    @given(data=st.data())
    def check(data):
        (leaf,), view = draw_operands(data, [(3, 4)], layout)
        (operand,) = view([leaf])
        array = operand.array
        assert tuple(operand.shape) == (3, 4)
        if layout == "contiguous":
            assert array.flags.c_contiguous
        elif layout == "transposed":
            assert array.flags.f_contiguous and not array.flags.c_contiguous
        elif layout == "strided":
            assert array.strides[-1] == 2 * array.itemsize
        elif layout == "sliced":
            assert not array.flags.c_contiguous and array.strides[-1] == array.itemsize
        else:
            assert 0 in array.strides and leaf.numel() < 12
        np.testing.assert_array_equal(operand.numpy(), np.broadcast_to(leaf.numpy(), (3, 4)))

    check()


def test_mixed_layout_draws_every_layout_for_each_operand():
    drawn = _draws(5, lambda data: [_layout_of(t) for t in
                                    draw_operands(data, [(3, 4), (3, 4)], "mixed")[0]])
    for position in range(2):
        assert {layouts[position] for layouts in drawn} == set(OPERAND_LAYOUTS)


def _layout_of(leaf: mg.Tensor) -> str:
    array = leaf.array
    if leaf.shape != (3, 4):
        return "broadcast"
    if array.flags.c_contiguous:
        return "contiguous"
    if array.flags.f_contiguous:
        return "transposed"
    return "strided" if array.strides[-1] == 2 * array.itemsize else "sliced"
