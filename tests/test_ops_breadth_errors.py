"""Misuse of the selection, ordering, einsum, rearranging, padding and sampling ops raises
an exception that names the op, the shapes or values involved and what was expected."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import make_tensor

import minigrad as mg
import minigrad.nn.functional as F

pytestmark = pytest.mark.device


def t(values, dtype=None):
    return make_tensor(np.asarray(values), dtype=dtype)


def ints(values):
    return t(np.asarray(values, dtype=np.int64))


X = np.arange(6.0).reshape(2, 3)

CASES = {
    # name: (callable, exception type, fragments the message must contain)
    "gather_float_index": (lambda: mg.gather(t(X), 1, t([[0.0]])), RuntimeError,
                           ["gather", "int64", "float"]),
    "gather_bool_index": (lambda: mg.gather(t(X), 1, t([[True]])), RuntimeError,
                          ["gather", "int64", "bool"]),
    "gather_index_not_tensor": (lambda: mg.gather(t(X), 1, [[0]]), TypeError, ["gather"]),
    "gather_dims": (lambda: mg.gather(t(X), 1, ints([0, 1])), RuntimeError,
                    ["gather", "(2,)", "(2, 3)"]),
    "gather_too_large": (lambda: mg.gather(t(X), 1, ints([[0], [1], [2]])), RuntimeError,
                         ["gather", "(3, 1)", "(2, 3)", "dim 0"]),
    "gather_out_of_range": (lambda: mg.gather(t(X), 1, ints([[0, 3]])), IndexError,
                            ["gather", "index 3", "size 3", "(2, 3)", "(1, 2)"]),
    "gather_negative": (lambda: t(X).gather(0, ints([[-1, 0, 0]])), IndexError,
                        ["gather", "index -1", "size 2"]),
    "gather_bad_dim": (lambda: mg.gather(t(X), 2, ints([[0]])), IndexError,
                       ["gather", "dimension 2", "[-2, 1]"]),
    "scatter_src_too_small": (lambda: mg.scatter(t(X), 1, ints([[0, 1]]), t([[1.0]])),
                              RuntimeError, ["scatter", "(1, 1)", "(1, 2)"]),
    "scatter_no_src": (lambda: mg.scatter(t(X), 1, ints([[0]])), TypeError, ["scatter"]),
    "scatter_bad_reduce": (lambda: mg.scatter(t(X), 1, ints([[0]]), 1.0, reduce="max"),
                           ValueError, ["scatter", "'max'"]),
    "scatter_out_of_range": (lambda: t(X).scatter(0, ints([[2, 0, 0]]), 1.0), IndexError,
                             ["scatter", "index 2", "size 2"]),
    "scatter_add_number": (lambda: mg.scatter_add(t(X), 1, ints([[0]]), 1.0), TypeError,
                           ["scatter_add", "tensor"]),
    "index_select_matrix": (lambda: mg.index_select(t(X), 0, ints([[0]])), IndexError,
                            ["index_select", "vector", "(1, 1)"]),
    "index_select_out_of_range": (lambda: t(X).index_select(1, ints([0, 5])), IndexError,
                                  ["index_select", "index 5", "size 3", "(2, 3)"]),
    "index_select_float": (lambda: t(X).index_select(1, t([0.0])), RuntimeError,
                           ["index_select", "int64"]),
    "topk_k_too_large": (lambda: mg.topk(t(X), 4), RuntimeError,
                         ["topk", "k=4", "size 3", "(2, 3)"]),
    "topk_negative_k": (lambda: t(X).topk(-1, 0), RuntimeError, ["topk", "k=-1"]),
    "sort_bad_dim": (lambda: mg.sort(t(X), 3), IndexError, ["sort", "dimension 3"]),
    "cumsum_bad_dim": (lambda: mg.cumsum(t(X), -3), IndexError, ["cumsum", "dimension -3"]),
    "einsum_operand_count": (lambda: mg.einsum("ij,jk", t(X)), RuntimeError,
                             ["einsum", "2 operand", "1 tensor"]),
    "einsum_bad_character": (lambda: mg.einsum("i1->i", t(X)), RuntimeError,
                             ["einsum", "invalid subscript"]),
    "einsum_size_mismatch": (lambda: mg.einsum("ij,jk", t(X), t(X)), RuntimeError,
                             ["einsum", "subscript j", "size 3", "2", "(2, 3)"]),
    "einsum_diagonal_sizes": (lambda: mg.einsum("ii", t(X)), RuntimeError,
                              ["einsum", "subscript i", "repeated", "2", "3"]),
    "einsum_output_unknown": (lambda: mg.einsum("ij->k", t(X)), RuntimeError,
                              ["einsum", "output subscript k"]),
    "einsum_output_twice": (lambda: mg.einsum("ij->ii", t(X)), RuntimeError,
                            ["einsum", "more than once"]),
    "einsum_dims": (lambda: mg.einsum("ijk->i", t(X)), RuntimeError,
                    ["einsum", "operand 0", "2 dims", "(2, 3)", "names 3"]),
    "einsum_two_ellipses": (lambda: mg.einsum("...i...->i", t(X)), RuntimeError,
                            ["einsum", "more than one '...'"]),
    "einsum_not_tensor": (lambda: mg.einsum("ij", X), TypeError, ["einsum", "ndarray"]),
    "flip_repeated_dim": (lambda: mg.flip(t(X), (0, 0)), RuntimeError, ["flip", "[0, 0]"]),
    "roll_mismatch": (lambda: mg.roll(t(X), (1, 2), 0), RuntimeError,
                      ["roll", "2 shifts", "1 dims"]),
    "repeat_too_few": (lambda: t(X).repeat(2), RuntimeError, ["repeat", "[2]", "(2, 3)"]),
    "repeat_negative": (lambda: t(X).repeat(2, -1), RuntimeError, ["repeat", "-1"]),
    "repeat_float": (lambda: t(X).repeat(2.0, 1), TypeError, ["repeat", "integers"]),
    "repeat_interleave_counts": (lambda: mg.repeat_interleave(t(X), ints([1, 2]), 1),
                                 RuntimeError, ["repeat_interleave", "2 repeat counts", "3"]),
    "repeat_interleave_negative": (lambda: t(X).repeat_interleave(-1), RuntimeError,
                                   ["repeat_interleave", "non-negative"]),
    "repeat_interleave_output_size": (lambda: t(X).repeat_interleave(2, output_size=3),
                                      RuntimeError, ["repeat_interleave", "output_size=3", "12"]),
    "view_needs_copy": (lambda: t(X).T.view(6), RuntimeError,
                        ["view", "(3, 2)", "reshape"]),
    "view_dtype": (lambda: t(X).view(mg.float64), TypeError, ["view", ".to(dtype)"]),
    "select_out_of_range": (lambda: t(X).select(1, 3), IndexError, ["select", "index 3"]),
    "narrow_too_long": (lambda: mg.narrow(t(X), 1, 2, 2), IndexError, ["narrow", "size 3"]),
    "mm_dims": (lambda: mg.mm(t(X), t([1.0, 2.0, 3.0])), RuntimeError,
                ["mm", "2-D", "(2, 3)", "(3,)"]),
    "bmm_batch": (lambda: mg.bmm(t(np.ones((2, 1, 3))), t(np.ones((3, 3, 1)))), RuntimeError,
                  ["bmm", "batch"]),
    "dot_lengths": (lambda: mg.dot(t([1.0, 2.0]), t([1.0])), RuntimeError, ["dot", "(2,)"]),
    "div_rounding_mode": (lambda: mg.div(t(X), 2, rounding_mode="round"), ValueError,
                          ["div", "'round'"]),
    "integer_division_by_zero": (lambda: ints([1, 2]) // ints([1, 0]), RuntimeError,
                                 ["div", "by zero"]),
    "multinomial_negative": (lambda: mg.multinomial(t([0.5, -0.1]), 1), RuntimeError,
                             ["multinomial", ">= 0"]),
    "multinomial_nan": (lambda: mg.multinomial(t([0.5, np.nan]), 1), RuntimeError,
                        ["multinomial", "nan"]),
    "multinomial_zero_row": (lambda: mg.multinomial(t([[0.5, 0.5], [0.0, 0.0]]), 1),
                             RuntimeError, ["multinomial", "sums to 0"]),
    "multinomial_integers": (lambda: mg.multinomial(ints([1, 2]), 1), RuntimeError,
                             ["multinomial", "floating", "int64"]),
    "multinomial_3d": (lambda: mg.multinomial(t(np.ones((2, 2, 2))), 1), RuntimeError,
                       ["multinomial", "(2, 2, 2)"]),
    "multinomial_no_samples": (lambda: mg.multinomial(t([0.5, 0.5]), 0), RuntimeError,
                               ["multinomial", "num_samples"]),
    "multinomial_too_many": (lambda: t([0.5, 0.0, 0.5]).multinomial(3), RuntimeError,
                             ["multinomial", "3 samples", "2 categories"]),
    "multinomial_generator_type": (lambda: mg.multinomial(t([1.0]), 1, generator=3), TypeError,
                                   ["generator", "int"]),
    "pad_odd": (lambda: F.pad(t(X), (1,)), ValueError, ["pad", "even"]),
    "pad_too_many_dims": (lambda: F.pad(t(X), (1, 1, 1, 1, 1, 1)), ValueError,
                          ["pad", "3 dims", "(2, 3)"]),
    "pad_mode": (lambda: F.pad(t(X), (1, 1), mode="wrap"), ValueError, ["pad", "'wrap'"]),
    "pad_reflect_too_far": (lambda: F.pad(t(X), (3, 0), mode="reflect"), ValueError,
                            ["pad", "reflect", "at most 2", "size 3"]),
    "pad_reflect_1d": (lambda: F.pad(t([1.0, 2.0]), (1, 1), mode="reflect"),
                       NotImplementedError, ["pad", "reflect", "(2,)"]),
    "pad_crops_too_much": (lambda: F.pad(t(X), (-2, -2)), ValueError,
                           ["pad", "negative size", "size 3"]),
    "pad_value_with_mode": (lambda: F.pad(t(X), (1, 1), mode="replicate", value=2.0),
                            ValueError, ["pad", "value", "constant"]),
    "one_hot_float": (lambda: F.one_hot(t([1.0])), TypeError, ["one_hot", "int64", "float"]),
    "one_hot_negative": (lambda: F.one_hot(ints([-1, 0])), RuntimeError,
                         ["one_hot", "[-1, 0]"]),
    "one_hot_too_large": (lambda: F.one_hot(ints([3]), 3), RuntimeError,
                          ["one_hot", "[0, 3)", "[3, 3]"]),
    "one_hot_empty": (lambda: F.one_hot(ints(np.zeros(0, dtype=np.int64))), RuntimeError,
                      ["one_hot", "empty", "num_classes"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_error_names_the_op_and_the_problem(name):
    func, exception, fragments = CASES[name]
    with pytest.raises(exception) as caught:
        func()
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, (name, fragment, message)
