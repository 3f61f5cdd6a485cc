"""Random small programs from the op table, compiled and eager, give the same bits:
values and gradients, on the capture's inputs and on new ones (the replay). Programs mix
elementwise ops with broadcasting, reductions, views, slices, indexing and in-place
updates of tensors outside the graph. The blocks a replay writes results into start full
of NaN."""
from __future__ import annotations

import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from poisoned_blocks import poisoned_blocks

import minigrad as mg
from minigrad import ops

UNARY = ("exp", "tanh", "sigmoid", "relu", "abs", "neg", "sin", "square", "sqrt", "log1p",
         "rsqrt", "erf", "floor", "sign")
BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "atan2", "hypot")
REDUCTIONS = ("sum", "mean", "amax", "amin", "logsumexp", "softmax", "log_softmax", "var",
              "cumsum")
VIEWS = ("transpose", "flip", "getitem", "slice", "chunk", "select", "unsqueeze", "reshape")


def _apply_unary(name: str, x):
    if name in ("sqrt", "rsqrt", "log1p"):
        x = x.abs() + 0.5  # inside the op's domain
    return ops.OPS[name][0](x)


def _apply_reduction(name: str, x, dim: int, keepdim: bool):
    function = ops.OPS[name][0]
    if name in ("softmax", "log_softmax", "cumsum"):
        return function(x, dim)
    return function(x, dim, keepdim=keepdim)


def _apply_view(name: str, x, dim: int):
    if name == "transpose":
        return x.transpose(0, -1)
    if name == "flip":
        return x.flip(dim)
    if name == "getitem":
        return x[..., ::2] if x.shape[-1] > 1 else x[None]
    if name == "slice":  # unit steps: its adjoint is fused as a pad
        return x[..., 1:] if x.shape[-1] > 1 else x[None]
    if name == "chunk":
        return x.chunk(2, dim)[-1]
    if name == "select":
        return x.select(dim, 0) if x.ndim > 1 else x[None]
    if name == "unsqueeze":
        return x.unsqueeze(dim)
    return x.reshape(-1)


@st.composite
def programs(draw):
    """A list of instructions over values 0.. (the inputs first) and the inputs' shapes."""
    rows, cols = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    shapes = [(rows, cols), draw(st.sampled_from([(cols,), (rows, 1), (1, cols)]))]
    instructions = []
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "reduce", "view", "inplace"]))
        operand = draw(st.integers(0, 64))
        if kind == "unary":
            instructions.append((kind, draw(st.sampled_from(UNARY)), operand))
        elif kind == "binary":
            instructions.append((kind, draw(st.sampled_from(BINARY)), operand,
                                 draw(st.integers(0, 64))))
        elif kind == "reduce":
            instructions.append((kind, draw(st.sampled_from(REDUCTIONS)), operand,
                                 draw(st.integers(-2, 1)), draw(st.booleans())))
        elif kind == "view":
            instructions.append((kind, draw(st.sampled_from(VIEWS)), operand,
                                 draw(st.integers(-1, 0))))
        else:
            instructions.append((kind, draw(st.sampled_from(["add", "mul", "masked_fill"])),
                                 operand))
    return shapes, instructions


def _run(instructions, inputs: list):
    """The program on `inputs`: a scalar that weighs every value of the last result."""
    values = list(inputs)
    for instruction in instructions:
        kind, name, operand = instruction[:3]
        x = values[operand % len(values)]
        if kind == "unary":
            values.append(_apply_unary(name, x))
        elif kind == "binary":
            y = values[instruction[3] % len(values)]
            try:
                np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
            except ValueError:
                y = y.sum()
            values.append(ops.OPS[name][0](x, y))
        elif kind == "reduce":
            if x.ndim == 0:
                x = x.reshape(1)
            dim = instruction[3] % x.ndim
            values.append(_apply_reduction(name, x, dim, instruction[4]))
        elif kind == "view":
            if x.ndim == 0:
                x = x.reshape(1)
            values.append(_apply_view(name, x, instruction[3] % x.ndim))
        else:
            with mg.no_grad():  # an update in place of a tensor outside the graph
                scratch = x.detach().clone()
                if name == "add":
                    scratch.add_(x.detach())
                elif name == "mul":
                    scratch.mul_(x.detach() - 0.5)
                else:
                    scratch.masked_fill_(x.detach() > 0, -1.0)
            values.append(x * scratch)
    last = values[-1]
    weights = mg.arange(last.numel(), dtype=last.dtype).reshape(tuple(last.shape)) * 0.25 - 1
    return (last * weights).sum()


def _values_and_gradients(function, arrays: list) -> list:
    inputs = [mg.tensor(a, requires_grad=True) for a in arrays]
    out = function(*inputs)
    out.backward()
    return [out.array] + [t.grad.array if t.grad is not None else None for t in inputs]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs(), seed=st.integers(0, 2**16))
def test_a_compiled_program_gives_the_eager_values_and_gradients(program, seed):
    shapes, instructions = program

    def function(*inputs):
        return _run(instructions, inputs)

    compiled = mg.compile(function)
    rng = np.random.default_rng(seed)
    # random programs overflow and meet inf * 0: NaN and inf are values compared like any
    with warnings.catch_warnings(), poisoned_blocks(), np.errstate(all="ignore"):
        warnings.filterwarnings("error", message="mg.compile")
        for _ in range(2):  # the capture, then a replay on other values
            arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
            got = _values_and_gradients(compiled, arrays)
            want = _values_and_gradients(function, arrays)
            for g, w in zip(got, want, strict=True):
                assert (g is None) == (w is None)
                if w is not None:
                    assert g.dtype == w.dtype and g.shape == w.shape
                    assert np.array_equal(g, w, equal_nan=True), instructions
    assert compiled._plan_count == 1
