"""Gradients through time of the recurrent cells and modules against central differences:
mg.autograd.gradcheck (first order) and gradgradcheck (second order) in float64, on
hypothesis-drawn sizes, values, layouts and packed lengths. Checked with respect to the
input, the initial states and one drawn parameter (every parameter's gradient is also
compared with PyTorch's in test_rnn_torch.py).

Second order: gradcheck of the first derivatives, built with create_graph=True and
flattened into one vector (what gradgradcheck checks, one Jacobian instead of one per
input: a quarter of the cost for four inputs).

Tolerances: central differences with eps = 1e-6 err by about eps^2 * f''' (below 1e-9
for these tanh and sigmoid compositions of values and weights within +-2) plus rounding,
1e-16 * |f| / eps = 1e-10; the checks allow 1e-6 absolute and 1e-5 relative.
"""
import numpy as np
import pytest
from helpers import FEW_EXAMPLES, arrays, floats
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from minigrad.nn.utils import rnn as rnn_utils

TOLERANCES = {"eps": 1e-6, "atol": 1e-6, "rtol": 1e-5}
VALUES = floats(-2.0, 2.0)
MODULE_KINDS = ["RNN", "LSTM", "GRU"]
CELL_KINDS = ["RNNCell", "LSTMCell", "GRUCell"]


def _flat(*tensors) -> mg.Tensor:
    """Every output as one vector: gradcheck then builds one Jacobian, not one per output."""
    return mg.cat([t.reshape(-1) for t in tensors])


def _second_order(run, inputs) -> bool:
    """gradcheck of (inputs, v) -> the gradients of <run(inputs), v> for the inputs."""
    rng = np.random.default_rng(0)
    cotangent = mg.tensor(rng.standard_normal(tuple(run(*inputs).shape)), requires_grad=True)

    def first_derivatives(*args):
        primal, v = args[:-1], args[-1]
        return _flat(*mg.autograd.grad(run(*primal), list(primal), v, create_graph=True))

    return mg.autograd.gradcheck(first_derivatives, (*inputs, cotangent), **TOLERANCES)


def _leaf(draw, shape) -> mg.Tensor:
    return mg.tensor(draw(arrays(shape, VALUES)), requires_grad=True)


def _draw_parameters(draw, module) -> None:
    with mg.no_grad():
        for parameter in module.parameters():
            parameter.copy_(mg.tensor(draw(arrays(tuple(parameter.shape), VALUES))))


def _cell_case(data, kind, largest=2):
    """A cell with drawn sizes (up to `largest`) and weights, and (function, inputs) for
    the checks: x, the state tensors and every parameter (used through the module)."""
    input_size, hidden_size, batch = (data.draw(st.integers(1, largest)) for _ in range(3))
    cell = getattr(nn, kind)(input_size, hidden_size, bias=data.draw(st.booleans()),
                             dtype=mg.float64)
    _draw_parameters(data.draw, cell)
    x = _leaf(data.draw, (batch, input_size))
    states = [_leaf(data.draw, (batch, hidden_size))
              for _ in range(2 if kind == "LSTMCell" else 1)]

    def run(x, *states_and_parameters):
        state = states_and_parameters[:len(states)]
        out = cell(x, tuple(state) if kind == "LSTMCell" else state[0])
        return _flat(*(out if kind == "LSTMCell" else (out,)))

    return run, (x, *states, *cell.parameters())


def _module_case(data, kind, longest=3, largest=2):
    """A module with drawn layers, directions, layout (padded, batch-first or packed with
    drawn lengths), length (up to `longest`), other sizes (up to `largest`) and weights,
    and (function, inputs): x, the initial states and one drawn parameter."""
    num_layers = data.draw(st.integers(1, 2))
    bidirectional = data.draw(st.booleans())
    layout = data.draw(st.sampled_from(["padded", "batch_first", "packed"]))
    length = data.draw(st.integers(1, longest))
    batch, input_size, hidden_size = (data.draw(st.integers(1, largest)) for _ in range(3))
    module = getattr(nn, kind)(input_size, hidden_size, num_layers=num_layers,
                               bidirectional=bidirectional, batch_first=layout == "batch_first",
                               dtype=mg.float64)
    _draw_parameters(data.draw, module)
    name = data.draw(st.sampled_from([n for n, _ in module.named_parameters()]))
    shape = (batch, length, input_size) if layout == "batch_first" else (length, batch,
                                                                         input_size)
    x = _leaf(data.draw, shape)
    lengths = data.draw(st.lists(st.integers(1, length), min_size=batch, max_size=batch))
    state_shape = (num_layers * (2 if bidirectional else 1), batch, hidden_size)
    states = [_leaf(data.draw, state_shape) for _ in range(2 if kind == "LSTM" else 1)]

    def run(x, *states_and_parameter):
        state = states_and_parameter[:len(states)]
        hx = tuple(state) if kind == "LSTM" else state[0]
        if layout == "packed":
            x = rnn_utils.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, final = module(x, hx)
        out = out.data if layout == "packed" else out
        return _flat(out, *(final if kind == "LSTM" else (final,)))

    return run, (x, *states, getattr(module, name))


@pytest.mark.parametrize("kind", CELL_KINDS)
@settings(FEW_EXAMPLES, max_examples=8)
@given(data=st.data())
def test_cell_gradients_match_finite_differences(kind, data):
    run, inputs = _cell_case(data, kind)
    assert mg.autograd.gradcheck(run, inputs, **TOLERANCES)


@pytest.mark.parametrize("kind", CELL_KINDS)
@settings(FEW_EXAMPLES, max_examples=3)
@given(data=st.data())
def test_cell_second_derivatives_match_finite_differences(kind, data):
    run, inputs = _cell_case(data, kind, largest=1)
    assert _second_order(run, inputs)


@pytest.mark.parametrize("kind", MODULE_KINDS)
@settings(FEW_EXAMPLES, max_examples=6)
@given(data=st.data())
def test_module_gradients_through_time_match_finite_differences(kind, data):
    run, inputs = _module_case(data, kind)
    assert mg.autograd.gradcheck(run, inputs, **TOLERANCES)


@pytest.mark.parametrize("kind", MODULE_KINDS)
@settings(FEW_EXAMPLES, max_examples=2)
@given(data=st.data())
def test_module_second_derivatives_match_finite_differences(kind, data):
    run, inputs = _module_case(data, kind, longest=2, largest=1)
    assert _second_order(run, inputs)


def test_two_layer_bidirectional_lstm_second_derivatives():
    """The deepest graph, drawn nowhere by chance: two layers, both directions, a packed
    batch of uneven lengths, the Hessian-vector product through the weights of the top
    layer's backward direction."""
    rng = np.random.default_rng(0)
    lstm = nn.LSTM(1, 1, num_layers=2, bidirectional=True, dtype=mg.float64)
    x = mg.tensor(rng.standard_normal((2, 2, 1)), requires_grad=True)
    h0, c0 = (mg.tensor(rng.standard_normal((4, 2, 1)), requires_grad=True) for _ in range(2))

    def run(x, h0, c0, weight):
        out, (h_n, c_n) = lstm(rnn_utils.pack_padded_sequence(x, [2, 1]), (h0, c0))
        return _flat(out.data, h_n, c_n)

    assert _second_order(run, (x, h0, c0, lstm.weight_hh_l1_reverse))
