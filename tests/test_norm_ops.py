"""Norms (ops/norms.py): mg.linalg.vector_norm, matrix_norm and norm, and mg.norm /
Tensor.norm. Gradients (float64, first and second order) away from the kinks for every
kind of ord (inf, negative, fractional), the rules at the kinks (a zero vector, ties of
the max) as PyTorch's, dtype handling, and the errors. (Forward values against loops
over the elements: test_forward_linalg.py.)"""
from __future__ import annotations

import math

import numpy as np
import pytest
from domains import reduced_dims, signed_distinct_magnitudes
from helpers import (
    FEW_EXAMPLES,
    OP_SETTINGS,
    arrays,
    check_grad,
    layouts,
    make_tensor,
    nonzero,
    shapes,
)
from hypothesis import assume, given
from hypothesis import strategies as st
from op_cases import check_error_case, leaf
from torch_oracle import check_against_torch, check_error_like_torch

import minigrad as mg

pytestmark = pytest.mark.device

@pytest.mark.parametrize("ord", [2, 1, 3, 1.5, 0.5, -1, math.inf, -math.inf])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(), keepdim=st.booleans(), layout=layouts())
def test_vector_norm_gradients(ord, data, shape, keepdim, layout):
    x = leaf(data.draw(signed_distinct_magnitudes(shape)), layout)
    dim = data.draw(reduced_dims(len(shape)))
    check_grad(lambda t: mg.linalg.vector_norm(t, ord, dim, keepdim), x)


@pytest.mark.parametrize("ord", [2, 3, 1.5, 0.5, -1, math.inf])
@FEW_EXAMPLES
@given(data=st.data(), layout=layouts())
def test_vector_norm_second_derivatives(ord, data, layout):
    x = leaf(data.draw(signed_distinct_magnitudes((2, 3))), layout)
    assert mg.autograd.gradgradcheck(lambda t: mg.linalg.vector_norm(t, ord, 1), [x])


@pytest.mark.parametrize("ord", [1, -1, math.inf, -math.inf, "fro"])
@OP_SETTINGS
@given(data=st.data(), shape=shapes(min_dims=2), keepdim=st.booleans(), layout=layouts())
def test_matrix_norm_gradients(ord, data, shape, keepdim, layout):
    rows, cols = data.draw(st.permutations(range(len(shape))))[:2]
    x = data.draw(arrays(shape, nonzero(0.25)))  # |x| has a kink at 0
    if ord != "fro":  # the extreme row or column sum must not tie (the gradient jumps)
        sums = np.sort(np.abs(np.moveaxis(x, (rows, cols), (-2, -1))).sum(
            -2 if abs(ord) == 1 else -1), -1)
        assume(np.all(np.diff(sums, axis=-1) > 1e-3))
    check_grad(lambda t: mg.linalg.matrix_norm(t, ord, (rows, cols), keepdim), leaf(x, layout))


TORCH_CASES = {
    "vector_zero_rows": (lambda L, x: L.lib.linalg.vector_norm(x * L.index([[1.0], [0.0]]),
                                                              dim=1), (2, 3)),
    "vector_zero_rows_p3": (lambda L, x: L.lib.linalg.vector_norm(
        x * L.index([[1.0], [0.0]]), 3, dim=1), (2, 3)),
    "vector_zero_entries_p_below_1": (lambda L, x: L.lib.linalg.vector_norm(
        x * L.index([1.0, 0.0, 1.0]), 0.5, dim=-1), (2, 3)),
    "vector_inf_ties": (lambda L, x: L.lib.linalg.vector_norm(
        x.abs().amax() * L.index([1.0, -1.0, 0.5]) + x * 0, math.inf), (3,)),
    "vector_ord_0": (lambda L, x: L.lib.linalg.vector_norm(x * L.index([1.0, 0.0]), 0), (2,)),
    "vector_empty_dim_tuple": (lambda L, x: L.lib.linalg.vector_norm(x, 2, ()), (2, 3)),
    "norm_default": (lambda L, x: L.lib.norm(x), (2, 3, 2)),
    "norm_p_dims": (lambda L, x: x.norm(1.5, (0, 2), keepdim=True), (2, 3, 2)),
    "norm_fro_dims": (lambda L, x: x.norm("fro", (2, 0)), (2, 3, 2)),
    "linalg_norm_flat": (lambda L, x: L.lib.linalg.norm(x), (2, 3, 2)),
    "linalg_norm_vector_ord": (lambda L, x: L.lib.linalg.norm(x, -math.inf), (4,)),
    "linalg_norm_matrix_ord": (lambda L, x: L.lib.linalg.norm(x, 1), (3, 4)),
    "linalg_norm_dims": (lambda L, x: L.lib.linalg.norm(x, math.inf, (2, 0), True), (2, 3, 2)),
    "linalg_norm_one_dim": (lambda L, x: L.lib.linalg.norm(x, 3, -1), (2, 3)),
    "matrix_norm_default": (lambda L, x: L.lib.linalg.matrix_norm(x), (2, 3, 2)),
}


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name):
    call, shape = TORCH_CASES[name]
    check_against_torch(call, np.random.default_rng(13).standard_normal(shape))


def test_dtype_converts_the_input_first_as_in_torch():
    x = np.random.default_rng(13).standard_normal((2, 3)).astype(np.float32)
    check_against_torch(lambda L, t: L.lib.linalg.vector_norm(t, 3, 1, dtype=L.lib.float64), x)


def test_float16_norms_do_not_overflow_in_the_squares():
    # 300^2 is beyond float16's 65504: the sum of squares is taken in float32
    out = mg.norm(make_tensor(np.array([300.0, 400.0], np.float16)))
    assert out.dtype is mg.float16 and out.item() == 500.0


LIKE_TORCH = {
    "integer_input": (lambda L, x: L.lib.linalg.vector_norm(x.long()),
                      ["linalg.vector_norm", "floating point", "int64"]),
    "narrowing_dtype": (lambda L, x: L.lib.linalg.vector_norm(x, dtype=L.lib.float32),
                        ["linalg.vector_norm", "float32", "float64"]),
    "integer_dtype": (lambda L, x: L.lib.linalg.vector_norm(x, dtype=L.lib.int64),
                      ["linalg.vector_norm", "int64"]),
    "string_ord": (lambda L, x: L.lib.linalg.vector_norm(x, "fro"), ["ord", "'fro'"]),
    "inf_norm_of_nothing": (lambda L, x: L.lib.linalg.vector_norm(x[:, :0], math.inf, 1),
                            ["linalg.vector_norm", "empty"]),
    "matrix_ord_3": (lambda L, x: L.lib.linalg.matrix_norm(x, 3), ["matrix_norm", "ord=3"]),
    "matrix_of_vector": (lambda L, x: L.lib.linalg.matrix_norm(x[0]),
                         ["matrix_norm", "2 dims", "(3,)"]),
    "matrix_same_dim": (lambda L, x: L.lib.linalg.norm(x, dim=(0, -2)),
                        ["matrix_norm", "dim 0"]),
    "ord_without_dim_3d": (lambda L, x: L.lib.linalg.norm(x[None], 2),
                           ["linalg.norm", "1-D or 2-D", "(1, 2, 3)"]),
    "fro_over_three_dims": (lambda L, x: L.lib.norm(x[None], "fro", (0, 1, 2)),
                            ["matrix_norm", "2-tuple"]),
}


@pytest.mark.parametrize("name", list(LIKE_TORCH))
def test_errors_match_torch(name):
    call, fragments = LIKE_TORCH[name]
    check_error_like_torch(call, np.ones((2, 3)), fragments=fragments)


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_norms_that_need_singular_values_say_so(ord):
    check_error_case(lambda: mg.linalg.matrix_norm(make_tensor(np.eye(2)), ord),
                     NotImplementedError, ["matrix_norm", "singular values", repr(ord)])
