"""Positions and values found in tensors (ops/search.py): nonzero/argwhere,
bucketize/searchsorted and unique have no gradient; PyTorch as the oracle; the errors.
(Forward values against brute-force Python: test_forward_search.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from domains import STAND_IN_UNIQUE_AXIS
from helpers import make_tensor
from torch_oracle import check_against_torch, check_error_like_torch

import minigrad as mg

pytestmark = pytest.mark.device


def test_results_are_outside_the_graph():
    x = make_tensor(np.array([[0.0, 1.5], [1.5, -2.0]]), requires_grad=True)
    for out in (mg.nonzero(x), mg.argwhere(x), *mg.nonzero(x, as_tuple=True),
                mg.bucketize(x, make_tensor(np.array([0.0, 1.0]))),
                mg.searchsorted(make_tensor(np.array([0.0, 1.0])), x), *mg.unique(
                    x, return_inverse=True, return_counts=True)):
        assert not out.requires_grad and out.grad_fn is None


TORCH_CASES = {
    "nonzero": (lambda L, x: L.lib.nonzero(x), [[[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]]),
    "nonzero_tuple": (lambda L, x: x.nonzero(as_tuple=True), [[[0, 1, 0], [2, 0, 3]]]),
    "nonzero_0d": (lambda L, x: (L.lib.nonzero(x), L.lib.nonzero(x, as_tuple=True)), [2.0]),
    "argwhere_bool": (lambda L, x: L.lib.argwhere(x), [[[True, False], [True, True]]]),
    "bucketize": (lambda L, x, b: L.lib.bucketize(x, b), [[[1, 5], [3, 9]], [1, 3, 5, 7]]),
    "bucketize_right_number": (lambda L, b: L.lib.bucketize(3, b, right=True), [[1, 3, 5]]),
    "searchsorted_rows": (lambda L, s, v: L.lib.searchsorted(s, v, side="right"),
                          [[[1, 3, 5], [2, 2, 6]], [[3, 6], [2, 0]]]),
    "searchsorted_number": (lambda L, s: L.lib.searchsorted(s, 4.5), [[1.0, 3.0, 5.0]]),
    "searchsorted_int_sequence_float_values": (lambda L, s, v: L.lib.searchsorted(s, v),
                                               [[1, 3, 5], [[3.5, 0.5]]]),
    "searchsorted_sorter": (lambda L, s, i: L.lib.searchsorted(s, L.index([[4, 0]]),
                                                                sorter=i),
                            [[[5, 1, 3]], [[1, 2, 0]]]),
    "out_int32": (lambda L, s, v: (L.lib.searchsorted(s, v, out_int32=True),
                                   L.lib.bucketize(v, s, out_int32=True, right=True)),
                  [[1, 3, 5], [[3, 6], [0, 5]]]),
    "unique": (lambda L, x: L.lib.unique(x, return_inverse=True, return_counts=True),
               [[[3.0, 1.0], [3.0, 2.0]]]),
    "unique_values_only": (lambda L, x: x.unique(), [[True, False, True]]),
}


@STAND_IN_UNIQUE_AXIS
def test_unique_along_a_dim_matches_torch():
    check_against_torch(lambda L, x: L.lib.unique(x, dim=1, return_counts=True),
                        np.array([[1, 2, 1], [0, 5, 0]]))


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name):
    call, values = TORCH_CASES[name]
    check_against_torch(call, *[np.asarray(v) for v in values])


ERRORS = {
    "side_against_right": (lambda L, s: L.lib.searchsorted(s, s, side="left", right=True),
                           [[1, 2]], ["searchsorted", "right=True"]),
    "unknown_side": (lambda L, s: L.lib.searchsorted(s, s, side="middle"), [[1, 2]],
                     ["searchsorted", "'middle'"]),
    "rows_differ": (lambda L, s, v: L.lib.searchsorted(s, v), [[[1, 2], [3, 4]], [[1]]],
                    ["searchsorted", "(2, 2)", "(1, 1)"]),
    "number_for_rows": (lambda L, s: L.lib.searchsorted(s, 1), [[[1, 2]]],
                        ["searchsorted", "(1, 2)"]),
    "bucketize_2d_boundaries": (lambda L, x, b: L.lib.bucketize(x, b), [[1], [[1, 2]]],
                                ["bucketize", "1-D", "(1, 2)"]),
    "unique_bad_dim": (lambda L, x: L.lib.unique(x, dim=2), [[[1, 2]]], ["unique", "2"]),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    call, values, fragments = ERRORS[name]
    check_error_like_torch(call, *values, fragments=fragments)
