"""einsum: sums of products over named dims, as in PyTorch and NumPy.

    einsum("bij,bjk->bik", a, b)    batched matrix product
    einsum("ii", a)                 trace (a repeated letter takes a diagonal)
    einsum("...ij->...ji", a)       "..." stands for any number of leading dims
    einsum("ij,jk", a, b)           no "->": the output is the letters used once, sorted

einsum() first rewrites the equation into a plain form: "..." becomes letters of its own,
a repeated letter within an operand becomes a diagonal taken by indexing (differentiable
on its own), and the output is explicit. The Einsum op below then only meets operands
whose letters are distinct, which keeps its gradient one einsum per operand.
"""
from __future__ import annotations

import math
import string

from minigrad import dtypes
from minigrad.amp.cast_policy import autocast_op
from minigrad.autograd.function import Function
from minigrad.backend import array_module
from minigrad.ops.shape import broadcast_to
from minigrad.tensor_base import TensorBase

# NumPy's contraction-path search costs ~20 us a call; it pays off (by handing the work to
# BLAS) once the plain loop has more multiply-adds than this
_OPTIMIZE_ABOVE = 1 << 15


class Einsum(Function):
    """out = einsum("A,B,...->O", *operands), every operand's letters distinct;
    d operand_i = einsum(g and every other operand -> operand i's letters); a letter only
    operand i has (summed away in the forward) is broadcast back over its dim."""

    def forward(self, *operands, subscripts, output):
        self.subscripts, self.output = subscripts, output
        self.save_for_backward(*operands)
        return _contract(subscripts, output, operands)

    def backward(self, grad):
        operands = self.saved
        grads = []
        for i, needs in enumerate(self.needs_input_grad):
            grads.append(self._operand_grad(i, grad, operands) if needs else None)
        return tuple(grads)

    def _operand_grad(self, i: int, grad: TensorBase, operands: tuple) -> TensorBase:
        others = [j for j in range(len(operands)) if j != i]
        subscripts = [self.output] + [self.subscripts[j] for j in others]
        known = set("".join(subscripts))
        letters = self.subscripts[i]
        kept = "".join(c for c in letters if c in known)
        contracted = Einsum.apply(grad, *[operands[j] for j in others],
                                  subscripts=tuple(subscripts), output=kept)
        if kept == letters:
            return contracted
        # letters only operand i has: a size-1 dim in the gradient, broadcast back
        sizes = dict(zip(kept, contracted.shape))
        shape = operands[i].shape
        inserted = contracted.reshape(tuple(sizes.get(c, 1) for c in letters))
        return broadcast_to(inserted, tuple(sizes.get(c, n) for c, n in zip(letters, shape)))


@autocast_op("einsum")
def einsum(equation: str, *operands) -> TensorBase:
    """The sum over every letter not in the output of the product of the operands, each
    indexed by its letters (see the module docstring). Accepts einsum(eq, a, b) and
    einsum(eq, [a, b]); operands are promoted to one dtype."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands or not all(isinstance(t, TensorBase) for t in operands):
        raise TypeError(f"einsum: expected one or more tensors after the equation, got "
                        f"{[type(t).__name__ for t in operands]}")
    inputs, output = _parse(equation, operands)
    operands = list(_promoted(operands))
    for i, letters in enumerate(inputs):
        if len(set(letters)) < len(letters):
            operands[i], inputs[i] = _diagonal(operands[i], letters, equation)
    sizes = _letter_sizes(inputs, operands, equation)
    # size-1 dims broadcast here, so the einsum itself never broadcasts (CuPy's may not)
    operands = [broadcast_to(t, tuple(sizes[c] for c in letters))
                for letters, t in zip(inputs, operands)]
    return Einsum.apply(*operands, subscripts=tuple(inputs), output=output)


def _contract(subscripts, output: str, arrays):
    xp = array_module(arrays[0])
    sizes = {}
    for letters, array in zip(subscripts, arrays):
        sizes.update(zip(letters, array.shape))
    optimize = "greedy" if math.prod(sizes.values()) > _OPTIMIZE_ABOVE else False
    out = xp.asarray(xp.einsum(",".join(subscripts) + "->" + output, *arrays,
                               optimize=optimize))
    # einsum returns a view of its input for a pure transpose or diagonal: copy it, so the
    # output has its own memory like every other op's
    if any(xp.may_share_memory(out, a) for a in arrays):
        out = out.copy()
    return out


def _parse(equation: str, operands) -> tuple[list, str]:
    """Input letters per operand and the output letters, with "..." spelled out as
    letters the equation does not use, and the output made explicit."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(
            f"einsum: the equation {equation!r} has {len(terms)} operand(s) but "
            f"{len(operands)} tensor(s) were given"
        )
    for term in terms + [rhs]:
        if any(c not in string.ascii_letters for c in term.replace("...", "")):
            raise RuntimeError(
                f"einsum: invalid subscript in {equation!r}: use letters a-z, A-Z and '...'"
            )
    free = [c for c in string.ascii_letters if c not in equation]
    widest = max(t.ndim - len(term.replace("...", "")) for term, t in zip(terms, operands))
    broadcast = "".join(free[:max(widest, 0)])  # the letters "..." stands for
    inputs = [_expand(term, t, broadcast, i, equation) for i, (term, t) in
              enumerate(zip(terms, operands))]
    if arrow:
        output = rhs.replace("...", broadcast)
        for c in output:
            if output.count(c) > 1:
                raise RuntimeError(f"einsum: output subscript {c} appears more than once "
                                   f"in {equation!r}")
            if not any(c in letters for letters in inputs):
                raise RuntimeError(f"einsum: output subscript {c} in {equation!r} does not "
                                   "appear in any input")
    else:  # implicit: the broadcast dims, then every letter used once, sorted
        used = "".join(terms).replace("...", "")
        output = broadcast + "".join(sorted(c for c in set(used) if used.count(c) == 1))
    return inputs, output


def _expand(term: str, t: TensorBase, broadcast: str, i: int, equation: str) -> str:
    named = term.replace("...", "")
    if term.count("...") > 1:
        raise RuntimeError(f"einsum: operand {i} of {equation!r} has more than one '...'")
    extra = t.ndim - len(named)
    if extra < 0 or (extra > 0 and "..." not in term):
        raise RuntimeError(
            f"einsum: operand {i} has {t.ndim} dims (shape {tuple(t.shape)}) but "
            f"{term!r} in {equation!r} names {len(named)}"
            + ("" if "..." in term else " and has no '...'")
        )
    return term.replace("...", broadcast[len(broadcast) - extra:]) if "..." in term else term


def _diagonal(t: TensorBase, letters: str, equation: str) -> tuple:
    """t indexed so that dims sharing a letter take their diagonal: ("ii", t) ->
    ("i", t[arange, arange]). Returns (tensor, distinct letters)."""
    distinct = "".join(dict.fromkeys(letters))
    sizes = {}
    for c, n in zip(letters, t.shape):
        if sizes.setdefault(c, n) != n:
            raise RuntimeError(
                f"einsum: subscript {c} is repeated in {letters!r} of {equation!r} but its "
                f"dims have different sizes, {sizes[c]} and {n} (shape {tuple(t.shape)})"
            )
    xp = t.xp
    ranges = {
        c: xp.arange(sizes[c]).reshape([-1 if k == position else 1
                                        for k in range(len(distinct))])
        for position, c in enumerate(distinct)
    }
    return t[tuple(ranges[c] for c in letters)], distinct


def _letter_sizes(inputs: list, operands: list, equation: str) -> dict:
    """Each letter's size: the same in every operand, or 1 there (which broadcasts)."""
    seen = {}
    for i, (letters, t) in enumerate(zip(inputs, operands)):
        for c, n in zip(letters, t.shape):
            first, where = seen.setdefault(c, (n, i))
            if n != first and 1 not in (n, first):
                raise RuntimeError(
                    f"einsum: subscript {c} has size {first} in operand {where} but {n} in "
                    f"operand {i} (shape {tuple(t.shape)}) of {equation!r}"
                )
            if first == 1 and n != 1:
                seen[c] = (n, i)
    return {c: n for c, (n, _) in seen.items()}


def _promoted(operands) -> list:
    result = operands[0].dtype
    for t in operands[1:]:
        result = dtypes.promote_types(result, t.dtype)
    devices = {t.device for t in operands}
    if len(devices) > 1:
        raise RuntimeError(
            f"einsum: expected all operands on one device, got {sorted(map(str, devices))}"
        )
    return [t if t.dtype is result else t.to(result) for t in operands]
