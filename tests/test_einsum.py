"""einsum's gradients on drawn equations: letters from all of a-z and A-Z in any order (a
rule that sorts or reorders an operand's letters is wrong on most of them), letters
repeated within an operand (diagonals), letters only one operand has (summed away), "..."
with broadcast batch dims, and outputs explicit in any order or implicit. Operands are
contiguous, transposed, strided or sliced leaves."""
from __future__ import annotations

import string

import numpy as np
import pytest
from helpers import FEW_EXAMPLES, arrays, check_grad, layouts, make_tensor
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg

pytestmark = pytest.mark.device


@st.composite
def einsum_cases(draw, max_operands: int = 3):
    """(equation, operand shapes): 1 to max_operands operands over 2 to 5 letters of sizes
    2 or 3, each operand naming 2 or 3 of them in a drawn order; sometimes one letter twice
    in an operand, sometimes "..." (0 to 2 batch dims, some of size 1) in some operands at
    a drawn position; the output explicit (a drawn order of some letters, "..." anywhere
    or left out, which sums the batch dims) or implicit."""
    letters = draw(st.lists(st.sampled_from(string.ascii_letters), min_size=2, max_size=5,
                            unique=True))
    size = {c: draw(st.integers(2, 3)) for c in letters}
    count = draw(st.integers(1, max_operands))
    terms = [draw(st.lists(st.sampled_from(letters), min_size=2, max_size=3, unique=True))
             for _ in range(count)]
    if draw(st.booleans()):  # a diagonal: one letter twice in one operand
        term = terms[draw(st.integers(0, count - 1))]
        term.insert(draw(st.integers(0, len(term))), draw(st.sampled_from(term)))
    batch = tuple(draw(st.lists(st.integers(2, 3), max_size=2)))
    with_ellipsis = [draw(st.booleans()) for _ in terms] if batch else [False] * count
    shapes, texts = [], []
    for term, ellipsis in zip(terms, with_ellipsis):
        shape = [size[c] for c in term]
        if ellipsis:
            own = [draw(st.sampled_from([n, 1])) for n in batch[draw(st.integers(0, len(batch))):]]
            position = draw(st.integers(0, len(term)))
            term = term[:position] + ["..."] + term[position:]
            shape = shape[:position] + own + shape[position:]
        shapes.append(tuple(shape))
        texts.append("".join(term))
    equation = ",".join(texts)
    if draw(st.booleans()):
        used = sorted({c for term in terms for c in term})
        output = draw(st.lists(st.sampled_from(used), max_size=len(used), unique=True))
        if any(with_ellipsis) and draw(st.booleans()):
            output.insert(draw(st.integers(0, len(output))), "...")
        equation += "->" + "".join(output)
    return equation, shapes


def _small(case) -> bool:
    """At most 36 elements in each operand and in the output (a Jacobian row or column
    per element)."""
    equation, shapes = case
    out = mg.einsum(equation, *[mg.zeros(*shape) for shape in shapes])
    return max([out.numel()] + [int(np.prod(shape)) for shape in shapes]) <= 36


@FEW_EXAMPLES
@given(data=st.data(), case=einsum_cases().filter(_small), layout=layouts())
def test_einsum_drawn_equations(data, case, layout):
    equation, shapes = case
    operands = [make_tensor(data.draw(arrays(shape)), requires_grad=True, layout=layout)
                for shape in shapes]
    check_grad(lambda *ts: mg.einsum(equation, *ts), *operands)


@pytest.mark.parametrize("equation, shapes", [
    ("ji,jk->ik", [(3, 2), (3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 2, 4)]),
    ("kj,ji", [(2, 3), (3, 4)]),
    ("Ba,aB->aB", [(3, 2), (2, 3)]),
    ("ii...->...i", [(3, 3, 2)]),
])
def test_einsum_letters_out_of_order(equation, shapes):
    rng = np.random.default_rng(0)
    operands = [make_tensor(rng.standard_normal(shape), requires_grad=True) for shape in shapes]
    check_grad(lambda *ts: mg.einsum(equation, *ts), *operands)
