"""One time step of the recurrent networks: the step rules shared with nn.RNN, nn.LSTM and
nn.GRU (rnn.py), and the cell modules RNNCell, LSTMCell and GRUCell, with PyTorch's
arguments, parameter names, gate order and initialisation.

A step rule takes the input's share of the gates, x W_ih^T + b_ih (a whole sequence's is
computed in one product before the loop), and the state, (h,) or (h, c) for an LSTM, and
returns the next state. It is written with tensor ops, so higher derivatives come free.
"""
from __future__ import annotations

import math
from functools import partial

from minigrad import creation
from minigrad.nn import init
from minigrad.nn.functional.linear import linear
from minigrad.nn.modules.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor

NONLINEARITIES = ("tanh", "relu")


def rnn_step(input_gates: Tensor, state: tuple, weight_hh: Tensor,
             bias_hh: Tensor | None = None, nonlinearity: str = "tanh") -> tuple:
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act = tanh or relu."""
    (hidden,) = state
    preactivation = input_gates + linear(hidden, weight_hh, bias_hh)
    return (preactivation.tanh() if nonlinearity == "tanh" else preactivation.relu(),)


def lstm_step(input_gates: Tensor, state: tuple, weight_hh: Tensor,
              bias_hh: Tensor | None = None, weight_hr: Tensor | None = None) -> tuple:
    """With x W_ih^T + b_ih + h W_hh^T + b_hh split into (i, f, g, o) along the features:
        c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h' = sigmoid(o) * tanh(c')      (h' W_hr^T when the LSTM projects, proj_size > 0)"""
    hidden, cell = state
    gates = input_gates + linear(hidden, weight_hh, bias_hh)
    input_gate, forget_gate, candidate, output_gate = gates.chunk(4, 1)
    cell = forget_gate.sigmoid() * cell + input_gate.sigmoid() * candidate.tanh()
    hidden = output_gate.sigmoid() * cell.tanh()
    if weight_hr is not None:
        hidden = linear(hidden, weight_hr)
    return hidden, cell


def gru_step(input_gates: Tensor, state: tuple, weight_hh: Tensor,
             bias_hh: Tensor | None = None) -> tuple:
    """With x W_ih^T + b_ih split into (x_r, x_z, x_n) and h W_hh^T + b_hh into
    (h_r, h_z, h_n):
        r = sigmoid(x_r + h_r),   z = sigmoid(x_z + h_z),   n = tanh(x_n + r * h_n)
        h' = (1 - z) * n + z * h  =  n + z * (h - n)"""
    (hidden,) = state
    hidden_gates = linear(hidden, weight_hh, bias_hh)
    size = hidden.shape[-1]
    reset_update = (input_gates[:, :2 * size] + hidden_gates[:, :2 * size]).sigmoid()
    reset, update = reset_update[:, :size], reset_update[:, size:]
    new = (input_gates[:, 2 * size:] + reset * hidden_gates[:, 2 * size:]).tanh()
    return (new + update * (hidden - new),)


def reset_recurrent_parameters(module: Module, hidden_size: int) -> None:
    """PyTorch's initialisation of every recurrent weight and bias: U(-k, k), k = 1/sqrt(H)."""
    bound = 1 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for parameter in module.parameters():
        init.uniform_(parameter, -bound, bound)


def check_input_dtype(name: str, input: Tensor, weight: Tensor,  # noqa: A002
                      error: type[Exception]) -> None:
    if input.dtype != weight.dtype:
        raise error(f"{name} input dtype ({input.dtype}) does not match weight dtype "
                    f"({weight.dtype}). Convert input: input.to({weight.dtype}), or convert "
                    f"model: model.to({input.dtype})")


class RNNCellBase(Module):
    """weight_ih (gates * H, input_size), weight_hh (gates * H, H), bias_ih and bias_hh
    (gates * H,), the gates stacked in PyTorch's order."""

    state_count = 1  # the state is (h,); an LSTM's is (h, c)

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        name = type(self).__name__
        self.input_size = creation.as_size(input_size, name, "input_size")
        self.hidden_size = creation.as_size(hidden_size, name, "hidden_size")
        self.bias = bias
        gates = num_chunks * self.hidden_size
        self.weight_ih = Parameter(creation.zeros(gates, self.input_size, dtype=dtype,
                                                  device=device))
        self.weight_hh = Parameter(creation.zeros(gates, self.hidden_size, dtype=dtype,
                                                  device=device))
        if bias:
            self.bias_ih = Parameter(creation.zeros(gates, dtype=dtype, device=device))
            self.bias_hh = Parameter(creation.zeros(gates, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_recurrent_parameters(self, self.hidden_size)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    def _step(self, input: Tensor, state: tuple | None, step) -> tuple:  # noqa: A002
        """Check the input (B, input_size) or (input_size,) and the state tensors, (B, H)
        or (H,) alike (zeros when None), and run one step of `step` on them."""
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input has inconsistent input_size: got "
                               f"{input.shape[-1]} expected {self.input_size}")
        check_input_dtype(name, input, self.weight_ih, RuntimeError)
        x = input if batched else input.unsqueeze(0)
        if state is None:
            zeros = creation.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            state = (zeros,) * self.state_count
        else:
            state = tuple(self._checked_state(h, k, len(state), batched, x.shape[0])
                          for k, h in enumerate(state))
        input_gates = linear(x, self.weight_ih, self.bias_ih)
        state = step(input_gates, state, self.weight_hh, self.bias_hh)
        return state if batched else tuple(h.squeeze(0) for h in state)

    def _checked_state(self, hidden: Tensor, k: int, count: int, batched: bool,
                       batch: int) -> Tensor:
        name = type(self).__name__
        label = f"hx[{k}]" if count > 1 else "hidden"
        if hidden.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {hidden.ndim}D "
                             "instead")
        if hidden.ndim != (2 if batched else 1):
            raise RuntimeError(f"{name}: for {'batched 2-D' if batched else 'unbatched 1-D'} "
                               f"input, {label} should be {'2-D' if batched else '1-D'} too, "
                               f"got shape {tuple(hidden.shape)}")
        hidden = hidden if batched else hidden.unsqueeze(0)
        if hidden.shape[0] != batch:
            raise RuntimeError(f"{name}: Input batch size {batch} doesn't match hidden{k} "
                               f"batch size {hidden.shape[0]}")
        if hidden.shape[1] != self.hidden_size:
            raise RuntimeError(f"{name}: hidden{k} has inconsistent hidden_size: got "
                               f"{hidden.shape[1]}, expected {self.hidden_size}")
        return hidden


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (relu with nonlinearity="relu")."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        if nonlinearity not in NONLINEARITIES:
            raise ValueError(f"RNNCell: Unknown nonlinearity '{nonlinearity}'. Select from "
                             "'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        state = None if hx is None else (_tensor(hx, "RNNCell"),)
        return self._step(input, state, partial(rnn_step, nonlinearity=self.nonlinearity))[0]


class LSTMCell(RNNCellBase):
    """One LSTM step (see lstm_step); returns (h', c')."""

    state_count = 2

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:  # noqa: A002
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"LSTMCell: hx must be a pair (h_0, c_0) of tensors, got "
                            f"{type(hx).__name__}")
        return self._step(input, None if hx is None else tuple(hx), lstm_step)


class GRUCell(RNNCellBase):
    """One GRU step (see gru_step); returns h'."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        state = None if hx is None else (_tensor(hx, "GRUCell"),)
        return self._step(input, state, gru_step)[0]


def _tensor(hx, name: str) -> Tensor:
    if not isinstance(hx, Tensor):
        raise TypeError(f"{name}: hx must be a Tensor, got {type(hx).__name__}")
    return hx
