"""The gradient checkers checked: mg.autograd.gradcheck and gradgradcheck must reject
backward rules that are wrong in the ways backward rules go wrong (a wrong sign, a missing
factor, a transposed product, the gradient of the other input, a broadcast summed over
the wrong dim or averaged, one element 10% off), in float64 and float32, at the step and
tolerances the suite uses (helpers.GRADCHECK_SETTINGS); and accept the correct rules.

Every rule below is a Function whose forward is right and whose backward is the rule
under test. For second derivatives, Pairing computes <f(a, b), c> with a correct first
derivative whose part dc = f(a, b) goes through the rule's Function: only its second
derivatives see the rule."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest
from helpers import GRADCHECK_SETTINGS, OP_SETTINGS, arrays, make_tensor, nonzero
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.autograd import GradcheckError, gradcheck, gradgradcheck
from minigrad.autograd.function import Function

pytestmark = pytest.mark.device


class Rule(NamedTuple):
    """out = forward(a, b) (arrays or tensors); vjp(g, a, b) -> (da, db) in tensor ops."""

    forward: Callable
    vjp: Callable
    shapes: tuple


def _mul(g, a, b):
    return g * b, g * a


def _div(g, a, b):
    return g / b, -g * a / (b * b)


def _mul_square(g, a, b):  # out = a * a * b
    return 2 * g * a * b, g * a * a


def _matmul(g, a, b):
    return g @ b.T, a.T @ g


def _add_columns(g, a, b):  # b (n, 1) is broadcast along the columns of a (n, n)
    return g, g.sum(1, keepdim=True)


def _bump_first_element(t):
    """t with its first element 10% larger: one entry of a Jacobian wrong."""
    bump = np.ones(t.shape)
    bump.flat[0] = 1.1
    return t * make_tensor(bump, dtype=t.dtype)


SQUARE = ((3, 3), (3, 3))
RULES = {
    "mul": Rule(lambda a, b: a * b, _mul, SQUARE),
    "div": Rule(lambda a, b: a / b, _div, SQUARE),
    "mul_square": Rule(lambda a, b: a * a * b, _mul_square, SQUARE),
    "matmul": Rule(lambda a, b: a @ b, _matmul, SQUARE),
    "add_broadcast": Rule(lambda a, b: a + b, _add_columns, ((3, 3), (3, 1))),
}

# name -> (the correct rule it corrupts, the flawed vjp)
FLAWED = {
    "wrong_sign": ("mul", lambda g, a, b: (g * b, -(g * a))),
    "missing_factor_2": ("mul_square", lambda g, a, b: (g * a * b, g * a * a)),
    "transposed_gradient": ("matmul", lambda g, a, b: (g @ b, a.T @ g)),
    "untransposed_operand": ("matmul", lambda g, a, b: (g @ b.T, a @ g)),
    "gradient_of_the_other_input": ("div", lambda g, a, b: tuple(reversed(_div(g, a, b)))),
    "broadcast_summed_over_wrong_dim": ("add_broadcast",
                                        lambda g, a, b: (g, g.sum(0).reshape(3, 1))),
    "broadcast_averaged": ("add_broadcast", lambda g, a, b: (g, g.mean(1, keepdim=True))),
    "one_element_ten_percent_off": ("mul", lambda g, a, b: (_bump_first_element(g * b),
                                                            g * a)),
}


class RuleOp(Function):
    """out = rule.forward(a, b), differentiated by `vjp`."""

    def forward(self, a, b, rule, vjp):
        self.vjp = vjp
        self.save_for_backward(a, b)
        return rule.forward(a, b)

    def backward(self, grad):
        a, b = self.saved
        return self.vjp(grad, a, b)


class Pairing(Function):
    """out = sum(f(a, b) * c);  da, db = rule.vjp(g c, a, b) (correct),  dc = g f(a, b)
    with f(a, b) computed by RuleOp under `vjp`: the second derivatives d(dc)/da and
    d(dc)/db are `vjp`'s."""

    def forward(self, a, b, c, rule, vjp):
        self.rule, self.vjp = rule, vjp
        self.save_for_backward(a, b, c)
        return (rule.forward(a, b) * c).sum()

    def backward(self, grad):
        a, b, c = self.saved
        grad_a, grad_b = self.rule.vjp(grad * c, a, b)
        return grad_a, grad_b, grad * RuleOp.apply(a, b, rule=self.rule, vjp=self.vjp)


DTYPES = [mg.float64, mg.float32]
# a flawed rule fails on almost any input: a few examples show it; the correct rules get
# more, since a tolerance too tight for some inputs would show there
REJECTIONS = settings(OP_SETTINGS, max_examples=4)
ACCEPTANCES = settings(OP_SETTINGS, max_examples=8)


def _inputs(data, rule: Rule, dtype, with_pairing: bool) -> list:
    """Leaves of the rule's shapes (and c, of the output's shape, for Pairing), away from
    0 (b divides)."""
    shapes = list(rule.shapes)
    if with_pairing:
        shapes.append(np.broadcast_shapes(*rule.shapes))
    return [make_tensor(data.draw(arrays(shape, nonzero(0.5, 2.0))), requires_grad=True,
                        dtype=dtype) for shape in shapes]


def _check(checker, func, inputs, dtype) -> bool:
    with warnings.catch_warnings():  # float32 inputs warn: here on purpose
        warnings.simplefilter("ignore", UserWarning)
        return checker(func, inputs, **GRADCHECK_SETTINGS[dtype.name])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(RULES))
@ACCEPTANCES
@given(data=st.data())
def test_correct_rules_pass(name, dtype, data):
    rule = RULES[name]
    inputs = _inputs(data, rule, dtype, with_pairing=True)
    assert _check(gradcheck, lambda a, b: RuleOp.apply(a, b, rule=rule, vjp=rule.vjp),
                  inputs[:2], dtype)
    assert _check(gradgradcheck,
                  lambda a, b, c: Pairing.apply(a, b, c, rule=rule, vjp=rule.vjp), inputs, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("flaw", list(FLAWED))
@REJECTIONS
@given(data=st.data())
def test_gradcheck_rejects_flawed_rule(flaw, dtype, data):
    name, vjp = FLAWED[flaw]
    rule = RULES[name]
    inputs = _inputs(data, rule, dtype, with_pairing=False)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        _check(gradcheck, lambda a, b: RuleOp.apply(a, b, rule=rule, vjp=vjp), inputs, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("flaw", list(FLAWED))
@REJECTIONS
@given(data=st.data())
def test_gradgradcheck_rejects_flawed_second_derivative(flaw, dtype, data):
    """Pairing's first derivatives are right whatever the rule (gradcheck passes); the
    flawed rule is seen in its second derivatives only."""
    name, vjp = FLAWED[flaw]
    rule = RULES[name]
    inputs = _inputs(data, rule, dtype, with_pairing=True)

    def pairing(a, b, c):
        return Pairing.apply(a, b, c, rule=rule, vjp=vjp)

    assert _check(gradcheck, pairing, inputs, dtype)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        _check(gradgradcheck, pairing, inputs, dtype)


def test_raise_exception_false_returns_false():
    name, vjp = FLAWED["wrong_sign"]
    rule = RULES[name]
    a, b = (make_tensor(np.full((3, 3), 1.5), requires_grad=True) for _ in range(2))
    assert gradcheck(lambda x, y: RuleOp.apply(x, y, rule=rule, vjp=vjp), (a, b),
                     raise_exception=False) is False


def test_output_that_depends_on_the_input_but_does_not_require_grad_is_rejected():
    """As if an op forgot to link its output into the graph: gradcheck must not skip it."""
    a = make_tensor(np.ones((2, 2)), requires_grad=True)
    with pytest.raises(GradcheckError, match="output 1 with respect to input 0"):
        gradcheck(lambda t: (t * 3, (t * 2).detach()), (a,))
    assert gradcheck(lambda t: (t * 3, (t * 0 + 1).detach()), (a,))  # a constant is fine


def test_difference_divides_by_the_step_the_dtype_stores():
    """Near 1000, float32 stores x +- 1e-3 to within 3e-5 (its spacing there is 6e-5), so
    dividing by 2e-3 instead of the stored step errs by up to 3%; 2x is exact both ways."""
    a = make_tensor(np.array([1000.3, -1000.7, 999.1], np.float32), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert gradcheck(lambda t: t * 2, (a,), eps=1e-3, atol=0, rtol=1e-6)
