"""The subset of CUDA C that minigrad's compiler writes into a `cupy.ElementwiseKernel`'s
operation, parsed once into a tree of NumPy calls that runs over whole arrays.

    operation := statement*
    statement := TYPE NAME '=' expr ';'    a local: TYPE is float, double or bool
               | NAME '=' expr ';'         a store into an output parameter
               | ';'
    expr      := or ('?' expr ':' expr)?   right-associative
    or        := and ('||' and)*
    and       := equality ('&&' equality)*
    equality  := relation (('==' | '!=') relation)*
    relation  := sum (('<' | '<=' | '>' | '>=') sum)*
    sum       := product (('+' | '-') product)*
    product   := unary (('*' | '/') unary)*
    unary     := ('-' | '!') unary | '(' TYPE ')' unary | primary
    primary   := NUMBER | NAME | 'isnan' '(' expr ')' | '(' expr ')'

`//` comments run to the end of a line. A number with a `.` or an exponent is a double,
with an `f` suffix a float, without either an int. Types follow C: every node knows its
dtype when it is parsed, an implicit conversion (C's usual arithmetic conversions) is a
node of its own, so each NumPy call gets operands of one dtype and float32 arithmetic
stays float32, rounded once per operation (CUDA's rounding under `--fmad=false`).
"""
from __future__ import annotations

import re
from fractions import Fraction
from typing import NoReturn

import numpy as np

BOOL, INT, FLOAT, DOUBLE = (np.dtype(name) for name in ("bool", "int32", "float32", "float64"))
C_TYPES = {"bool": BOOL, "float": FLOAT, "double": DOUBLE}
_INT_MAX = np.iinfo(np.int32).max
_RESERVED = frozenset(("i", "isnan", *C_TYPES))  # CuPy's loop index, the function, the types

_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fF]?)(?![A-Za-z0-9_.])
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<symbol>==|!=|<=|>=|&&|\|\||[-+*/<>!?:()=;])
""", re.VERBOSE)

# binary operators by precedence, lowest first
_BINARY_LEVELS = (("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"),
                  ("*", "/"))
_LOGICAL = {"&&": np.logical_and, "||": np.logical_or}
_COMPARISONS = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
                ">": np.greater, ">=": np.greater_equal}
_ARITHMETIC = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


# ----------------------------------------------------------------------------- C's types


def _promoted(dtype: np.dtype) -> np.dtype:
    """C's integer promotion: bool and integers narrower than int become int."""
    return INT if dtype.kind in "biu" and dtype.itemsize < INT.itemsize else dtype


def _arithmetic_type(left: np.dtype, right: np.dtype) -> np.dtype:
    """C's usual arithmetic conversions: the wider floating type when either operand is
    floating, else the promoted integers' common type (unsigned wins at equal width)."""
    floating = [dtype for dtype in (left, right) if dtype.kind == "f"]
    if floating:
        return max(floating, key=lambda dtype: dtype.itemsize)
    left, right = _promoted(left), _promoted(right)
    if left.kind == right.kind:
        return max(left, right, key=lambda dtype: dtype.itemsize)
    signed, unsigned = (left, right) if left.kind == "i" else (right, left)
    return signed if signed.itemsize > unsigned.itemsize else unsigned


def _truncating_divide(dividend, divisor):
    """C's integer division: the quotient rounded toward zero (NumPy's // floors)."""
    quotient = np.floor_divide(dividend, divisor)
    inexact = np.remainder(dividend, divisor) != 0
    return np.where(inexact & ((dividend < 0) != (divisor < 0)), quotient + 1, quotient)


def _nearest_float32(decimal: str) -> np.float32:
    """The float nearest the decimal, ties to even, as a C compiler reads `0.1f` (going
    through a double can round twice)."""
    exact = Fraction(decimal)
    with np.errstate(over="ignore"):  # 1e39f is inf, as in C
        guess = np.float32(float(exact))
    if np.isinf(guess):
        return guess
    candidates = (np.nextafter(guess, np.float32(-np.inf)), guess,
                  np.nextafter(guess, np.float32(np.inf)))
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact),
                                          int(c.view(np.uint32)) & 1))


# ----------------------------------------------------------------------------- the tree


class _Literal:
    """A constant, already of its C type."""

    def __init__(self, value: np.generic):
        self.value, self.dtype = value, value.dtype

    def evaluate(self, values: dict):
        return self.value


class _Variable:
    """A parameter (its memory, broadcast) or a local (its value)."""

    def __init__(self, name: str, dtype: np.dtype):
        self.name, self.dtype = name, dtype

    def evaluate(self, values: dict):
        return values[self.name]


class _Convert:
    """C's conversion to `dtype`: floats round to nearest, nonzero becomes true, floats
    become integers toward zero. A new value, never a view of the operand's memory."""

    def __init__(self, operand, dtype: np.dtype):
        self.operand, self.dtype = operand, dtype

    def evaluate(self, values: dict):
        return self.operand.evaluate(values).astype(self.dtype)


class _Apply:
    """`function` of operands that all have the dtype C computes in; gives `dtype`."""

    def __init__(self, function, operands: tuple, dtype: np.dtype):
        self.function, self.operands, self.dtype = function, operands, dtype

    def evaluate(self, values: dict):
        return self.function(*(operand.evaluate(values) for operand in self.operands))


def _converted(node, dtype: np.dtype):
    """`node` as `dtype`, through an implicit conversion when its dtype differs."""
    return node if node.dtype == dtype else _Convert(node, dtype)


def _binary_node(symbol: str, left, right):
    if symbol in _LOGICAL:
        return _Apply(_LOGICAL[symbol], (_converted(left, BOOL), _converted(right, BOOL)), BOOL)
    common = _arithmetic_type(left.dtype, right.dtype)
    operands = (_converted(left, common), _converted(right, common))
    if symbol in _COMPARISONS:
        return _Apply(_COMPARISONS[symbol], operands, BOOL)
    if symbol == "/" and common.kind != "f":
        return _Apply(_truncating_divide, operands, common)
    return _Apply(_ARITHMETIC[symbol], operands, common)


def _choice_node(condition, when_true, when_false):
    """`condition ? when_true : when_false`: both branches in their common type."""
    common = when_true.dtype
    if when_false.dtype != common:
        common = _arithmetic_type(when_true.dtype, when_false.dtype)
    operands = (_converted(condition, BOOL), _converted(when_true, common),
                _converted(when_false, common))
    return _Apply(np.where, operands, common)


class _Declaration:
    """`TYPE NAME = EXPR;`: a local holding the value converted to TYPE."""

    def __init__(self, name: str, expression):
        self.name, self.expression = name, expression

    def run(self, values: dict) -> None:
        values[self.name] = self.expression.evaluate(values)


class _Store:
    """`NAME = EXPR;`: the value, converted to the output's dtype, written to its memory."""

    def __init__(self, name: str, expression):
        self.name, self.expression = name, expression

    def run(self, values: dict) -> None:
        values[self.name][...] = self.expression.evaluate(values)


class Operation:
    """A parsed operation: its statements run in order over whole arrays."""

    def __init__(self, statements: list):
        self.statements = statements

    def run(self, values: dict) -> None:
        """Run on `values`: each input's memory broadcast (or its scalar) and each
        output's memory, by parameter name; locals are added as they are declared."""
        for statement in self.statements:
            statement.run(values)


# ----------------------------------------------------------------------------- the parser


def parse_operation(source: str, inputs: dict, outputs: dict, kernel: str) -> Operation:
    """The operation `source` of kernel `kernel`, whose parameters are `inputs` and
    `outputs` (name -> dtype). ValueError naming the kernel and the offending text for
    anything outside the subset."""
    return _Parser(source, inputs, outputs, kernel).operation()


class _Parser:
    """Recursive descent over the grammar in the module docstring, one method a rule."""

    def __init__(self, source: str, inputs: dict, outputs: dict, kernel: str):
        self._source, self._kernel = source, kernel
        self._outputs = outputs
        self._types = {**inputs, **outputs}  # what an expression can read, by name
        self._tokens = self._tokenize()
        self._position = 0

    def _tokenize(self) -> list:
        """(kind, text, offset) for each token, then ("end", "", len(source))."""
        tokens, offset = [], 0
        while offset < len(self._source):
            match = _TOKEN.match(self._source, offset)
            if match is None:
                self._fail("unexpected character", ("character", self._source[offset], offset))
            if match.lastgroup != "space":
                tokens.append((match.lastgroup, match.group(), offset))
            offset = match.end()
        tokens.append(("end", "", len(self._source)))
        return tokens

    def _fail(self, problem: str, token: tuple) -> NoReturn:
        """ValueError naming the kernel, the problem, the token and its line."""
        _, text, offset = token
        line_start = self._source.rfind("\n", 0, offset) + 1
        line_end = self._source.find("\n", offset)
        line = self._source[line_start:None if line_end < 0 else line_end]
        where = f'"{text}"' if text else "the end"
        raise ValueError(
            f'kernel "{self._kernel}": {problem} at {where} in line '
            f'"{line.strip()}" of its operation (the CuPy stand-in models only the subset '
            f"of CUDA C that minigrad's compiler writes; see {__name__})")

    # ---------------------------------------------------------------- tokens
    def _peek(self, ahead: int = 0) -> tuple:
        return self._tokens[min(self._position + ahead, len(self._tokens) - 1)]

    def _take(self) -> tuple:
        token = self._tokens[self._position]
        self._position += 1
        return token

    def _accept(self, symbol: str) -> bool:
        if self._peek()[:2] == ("symbol", symbol):
            self._position += 1
            return True
        return False

    def _expect(self, symbol: str) -> None:
        if not self._accept(symbol):
            self._fail(f'expected "{symbol}"', self._peek())

    def _expect_name(self) -> str:
        token = self._take()
        if token[0] != "name":
            self._fail("expected a name", token)
        return token[1]

    # ---------------------------------------------------------------- statements
    def operation(self) -> Operation:
        statements = []
        while self._peek()[0] != "end":
            if not self._accept(";"):
                statements.append(self._statement())
        return Operation(statements)

    def _statement(self):
        first_token = self._peek()
        first = self._expect_name()
        if self._peek()[0] == "name":  # TYPE NAME = EXPR;
            if first not in C_TYPES:
                self._fail("a type not modeled (float, double and bool are)", first_token)
            name_token = self._peek()
            name = self._expect_name()
            if name in self._types or name in _RESERVED:
                self._fail("a parameter, a local already or a reserved name", name_token)
            self._expect("=")
            # always converted, so a local holds a copy, never a view of an input
            value = _Convert(self._expression(), C_TYPES[first])
            self._expect(";")
            self._types[name] = value.dtype
            return _Declaration(name, value)
        if first not in self._outputs:  # NAME = EXPR;
            self._fail("not an output parameter (only outputs are assigned)", first_token)
        self._expect("=")
        value = _converted(self._expression(), self._outputs[first])
        self._expect(";")
        return _Store(first, value)

    # ---------------------------------------------------------------- expressions
    def _expression(self):
        condition = self._binary(0)
        if not self._accept("?"):
            return condition
        when_true = self._expression()
        self._expect(":")
        return _choice_node(condition, when_true, self._expression())

    def _binary(self, level: int):
        if level == len(_BINARY_LEVELS):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek()[0] == "symbol" and self._peek()[1] in _BINARY_LEVELS[level]:
            symbol = self._take()[1]
            left = _binary_node(symbol, left, self._binary(level + 1))
        return left

    def _unary(self):
        if self._accept("-"):
            operand = self._unary()
            promoted = _promoted(operand.dtype)
            return _Apply(np.negative, (_converted(operand, promoted),), promoted)
        if self._accept("!"):
            return _Apply(np.logical_not, (_converted(self._unary(), BOOL),), BOOL)
        if self._is_cast():
            self._take()
            dtype = C_TYPES[self._take()[1]]
            self._expect(")")
            return _Convert(self._unary(), dtype)
        return self._primary()

    def _is_cast(self) -> bool:
        return (self._peek()[:2] == ("symbol", "(") and self._peek(1)[1] in C_TYPES
                and self._peek(2)[:2] == ("symbol", ")"))

    def _primary(self):
        token = self._take()
        kind, text, _ = token
        if kind == "number":
            return self._number(token)
        if kind == "name" and self._peek()[:2] == ("symbol", "("):
            if text != "isnan":
                self._fail("a function not modeled (isnan is)", token)
            self._take()
            operand = self._expression()
            self._expect(")")
            return _Apply(np.isnan, (operand,), BOOL)
        if kind == "name":
            if text not in self._types:
                self._fail("unknown identifier", token)
            return _Variable(text, self._types[text])
        if (kind, text) == ("symbol", "("):
            inner = self._expression()
            self._expect(")")
            return inner
        self._fail("expected an expression", token)

    def _number(self, token: tuple) -> _Literal:
        text = token[1]
        decimal = text.rstrip("fF")
        is_floating = "." in decimal or "e" in decimal.lower()
        if decimal != text:
            if not is_floating:
                self._fail('invalid suffix "f" on an integer constant', token)
            return _Literal(_nearest_float32(decimal))
        if is_floating:
            return _Literal(np.float64(decimal))
        if len(decimal) > 1 and decimal.startswith("0"):
            self._fail("an octal constant (not modeled)", token)
        if int(decimal) > _INT_MAX:
            self._fail("an integer constant beyond int (not modeled)", token)
        return _Literal(np.int32(decimal))
