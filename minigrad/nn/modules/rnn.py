"""nn.RNN, nn.LSTM and nn.GRU: multi-layer, optionally bidirectional recurrent networks
with PyTorch's arguments, parameter names, initialisation, shapes and PackedSequence
inputs.

Each layer and direction runs in two parts, as cuDNN-style implementations do: one matrix
product gives the input's share of the gates at every time step, x W_ih^T + b_ih, then a
loop applies the step rule (rnn_cells.py) step by step. The loop works on the packed
layout (nn/utils/rnn.py): a padded batch (T, B, *) is a packed one whose B sequences all run
T steps, so one loop serves both. Where batch_sizes[t] shrinks, the sequences that ended
set their state aside as their final state; running backwards, where it grows, the
sequences that start there join from their initial state.
"""
from __future__ import annotations

import numbers
import warnings
from functools import partial

from minigrad import creation
from minigrad.nn.functional.dropout import dropout
from minigrad.nn.functional.linear import linear
from minigrad.nn.modules.module import Module
from minigrad.nn.modules.rnn_cells import (
    NONLINEARITIES,
    GRUCell,
    LSTMCell,
    RNNCell,
    RNNCellBase,
    check_input_dtype,
    gru_step,
    lstm_step,
    reset_recurrent_parameters,
    rnn_step,
)
from minigrad.nn.parameter import Parameter
from minigrad.nn.utils.rnn import PackedSequence
from minigrad.ops import cat, stack
from minigrad.tensor import Tensor

# PyTorch keeps the cells here too; they are defined with the step rules in rnn_cells.py
__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]

# mode -> (gates stacked in the weights, step rule)
MODES = {
    "RNN_TANH": (1, partial(rnn_step, nonlinearity="tanh")),
    "RNN_RELU": (1, partial(rnn_step, nonlinearity="relu")),
    "LSTM": (4, lstm_step),
    "GRU": (3, gru_step),
}


class RNNBase(Module):
    """The layers of an RNN, LSTM or GRU. Per layer l and direction (suffix "_reverse" for
    the backward one): weight_ih_l{l} (gates * H, input features: input_size, or
    directions * H_out above the first layer), weight_hh_l{l} (gates * H, H_out),
    bias_ih_l{l} and bias_hh_l{l} (gates * H,), and for an LSTM with proj_size > 0
    weight_hr_l{l} (proj_size, H); H_out = proj_size or H. Every one ~ U(-1/sqrt(H),
    1/sqrt(H)). dropout applies to each layer's output but the last, in training mode."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        name = type(self).__name__
        if mode not in MODES:
            raise ValueError(f"{name}: unknown mode {mode!r}, expected one of {list(MODES)}")
        input_size = _positive_size(input_size, name, "input_size")
        hidden_size = _positive_size(hidden_size, name, "hidden_size")
        num_layers = _positive_size(num_layers, name, "num_layers")
        proj_size = creation.as_size(proj_size, name, "proj_size")
        if proj_size and mode != "LSTM":
            raise ValueError(f"{name}: proj_size argument is only supported for LSTM, not RNN "
                             "or GRU")
        if proj_size >= hidden_size:
            raise ValueError(f"{name}: proj_size has to be smaller than hidden_size")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not (
                0 <= dropout <= 1):
            raise ValueError(f"{name}: dropout should be a number in range [0, 1] representing "
                             f"the probability of an element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout option adds dropout after all but last recurrent "
                          "layer, so non-zero dropout expects num_layers greater than 1, but "
                          f"got dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.bidirectional = bias, batch_first, bidirectional
        self.dropout = float(dropout)
        self.proj_size = proj_size
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(self._directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                names = []
                for kind, shape in self._parameter_shapes(layer).items():
                    setattr(self, kind + suffix, Parameter(
                        creation.zeros(*shape, dtype=dtype, device=device)))
                    names.append(kind + suffix)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _output_size(self) -> int:
        return self.proj_size or self.hidden_size

    def _parameter_shapes(self, layer: int) -> dict:
        gates = MODES[self.mode][0] * self.hidden_size
        features = self.input_size if layer == 0 else self._directions * self._output_size
        shapes = {"weight_ih": (gates, features), "weight_hh": (gates, self._output_size)}
        if self.bias:
            shapes.update(bias_ih=(gates,), bias_hh=(gates,))
        if self.proj_size:
            shapes["weight_hr"] = (self.proj_size, self.hidden_size)
        return shapes

    @property
    def all_weights(self) -> list:
        """The parameters of each layer and direction, in their registration order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def reset_parameters(self) -> None:
        reset_recurrent_parameters(self, self.hidden_size)

    def flatten_parameters(self) -> None:
        """Kept for ported code: PyTorch compacts the weights for cuDNN; here a no-op."""

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        for argument, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                                  ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, argument) != default:
                text += f", {argument}={getattr(self, argument)}"
        return text

    def forward(self, input, hx=None):  # noqa: A002
        """input (T, B, input_size), (B, T, input_size) with batch_first, (T, input_size)
        unbatched, or a PackedSequence; hx: h_0 (layers * directions, B, H_out), for an
        LSTM (h_0, c_0) with c_0 (layers * directions, B, H); zeros when None. Returns
        (output, h_n) ((output, (h_n, c_n)) for an LSTM), output with directions * H_out
        features in the input's layout, h_n from each sequence's last step."""
        name = type(self).__name__
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            steps = batch_sizes.tolist()
            batched = True
            if data.ndim != 2:
                raise RuntimeError(f"{name}: input must have 2 dimensions, got {data.ndim}")
        else:
            if input.ndim not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D "
                                 "instead")
            batched = input.ndim == 3
            sequence = input if batched else input.unsqueeze(1)
            if self.batch_first and batched:
                sequence = sequence.transpose(0, 1)
            length, batch = sequence.shape[:2]
            if length == 0:
                raise RuntimeError(f"{name}: Expected sequence length to be larger than 0")
            data = sequence.reshape(length * batch, sequence.shape[-1])
            steps = [batch] * length
            sorted_indices = unsorted_indices = None
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {data.shape[-1]}")
        check_input_dtype(name, data, self.weight_ih_l0, ValueError)
        state = self._initial_state(hx, batched, steps[0], data)
        if sorted_indices is not None:
            state = tuple(h.index_select(1, sorted_indices) for h in state)
        output, state = self._run_layers(data, steps, state)
        if unsorted_indices is not None:
            state = tuple(h.index_select(1, unsorted_indices) for h in state)
        if packed:
            output = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
        else:
            output = output.reshape(length, batch, output.shape[-1])
            if self.batch_first and batched:
                output = output.transpose(0, 1)
            if not batched:
                output = output.squeeze(1)
                state = tuple(h.squeeze(1) for h in state)
        return output, (state if self.mode == "LSTM" else state[0])

    def _initial_state(self, hx, batched: bool, batch: int, like: Tensor) -> tuple:
        """hx as a tuple of (layers * directions, batch, size) tensors, checked."""
        name = type(self).__name__
        stacked = self.num_layers * self._directions
        shapes = [(stacked, batch, self._output_size)]
        if self.mode == "LSTM":
            shapes.append((stacked, batch, self.hidden_size))
        if hx is None:
            return tuple(creation.zeros(*shape, dtype=like.dtype, device=like.device)
                         for shape in shapes)
        lstm = self.mode == "LSTM"
        if lstm and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError(f"{name}: hx must be a pair (h_0, c_0) of tensors, got "
                            f"{type(hx).__name__}")
        if not lstm and not isinstance(hx, Tensor):
            raise TypeError(f"{name}: hx must be a Tensor, got {type(hx).__name__}")
        state = tuple(hx) if lstm else (hx,)
        dims = 3 if batched else 2
        if any(h.ndim != dims for h in state):
            got = ", ".join(f"{h.ndim}-D" for h in state)
            raise RuntimeError(
                f"{name}: For {'batched 3-D' if batched else 'unbatched 2-D'} input, "
                f"{'hx and cx' if lstm else 'hx'} should also be {dims}-D but got "
                f"{'(' + got + ') tensors' if lstm else got + ' tensor'}")
        if not batched:
            state = tuple(h.unsqueeze(1) for h in state)
        for k, (h, shape) in enumerate(zip(state, shapes)):
            if tuple(h.shape) != shape:
                label = f"hidden[{k}]" if lstm else "hidden"
                raise RuntimeError(f"{name}: Expected {label} size {shape}, got "
                                   f"{list(h.shape)}")
        return state

    def _run_layers(self, data: Tensor, steps: list, state: tuple) -> tuple:
        """Run every layer and direction on packed rows; returns the last layer's output
        rows and the final state, stacked as the initial one."""
        finals = []
        layer_input = data
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                layer_input = dropout(layer_input, self.dropout, True)
            outputs = []
            for direction in range(self._directions):
                index = layer * self._directions + direction
                weights = {name.rpartition("_l")[0]: getattr(self, name)
                           for name in self._all_weights[index]}
                input_gates = linear(layer_input, weights.pop("weight_ih"),
                                     weights.pop("bias_ih", None))
                step = partial(MODES[self.mode][1], **weights)
                output, final = _scan(step, input_gates, steps,
                                      tuple(h[index] for h in state), reverse=direction == 1)
                outputs.append(output)
                finals.append(final)
            layer_input = outputs[0] if len(outputs) == 1 else cat(outputs, 1)
        return layer_input, tuple(stack(parts) for parts in zip(*finals))


def _positive_size(value, module: str, argument: str) -> int:
    size = creation.as_size(value, module, argument)
    if size == 0:
        raise ValueError(f"{module}: {argument} must be greater than zero")
    return size


def _scan(step, input_gates: Tensor, batch_sizes: list, initial_state: tuple,
          reverse: bool) -> tuple:
    """Apply `step` through the time steps of one layer and direction.

    input_gates holds the packed rows (batch_sizes[t] of them for step t, the longest
    sequences first) and initial_state (batch_sizes[0], size) tensors. Returns the output
    h of every row, in packed order, and the final state of every sequence."""
    step_inputs = _split_rows(input_gates, batch_sizes)
    times = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
    first = batch_sizes[times[0]]
    state = initial_state if first == batch_sizes[0] else tuple(
        h[:first] for h in initial_state)
    ended, outputs = [], []
    for t in times:
        size, running = batch_sizes[t], state[0].shape[0]
        if size < running:  # the shortest sequences ended at the step before
            ended.append(tuple(h[size:] for h in state))
            state = tuple(h[:size] for h in state)
        elif size > running:  # longer sequences start here (running backwards)
            state = tuple(cat([h, h0[running:size]]) for h, h0 in zip(state, initial_state))
        state = step(step_inputs[t], state)
        outputs.append(state[0])
    if reverse:
        outputs.reverse()
    if ended:  # sorted order: the running ones, then those that ended, latest first
        state = tuple(cat(parts) for parts in zip(state, *reversed(ended)))
    return cat(outputs), state


def _split_rows(rows: Tensor, sizes: list) -> list:
    """rows cut into consecutive blocks of sizes[0], sizes[1], ... rows. Backward gives
    each slice's gradient the shape of the tensor it was cut from, so T blocks cut from
    the whole would move T times all the rows; cut by halving, they move each row only
    log2(T) times."""
    if len(sizes) == 1:
        return [rows]
    half = len(sizes) // 2
    cut = sum(sizes[:half])
    return _split_rows(rows[:cut], sizes[:half]) + _split_rows(rows[cut:], sizes[half:])


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act = tanh or relu."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None) -> None:
        if nonlinearity not in NONLINEARITIES:
            raise ValueError(f"RNN: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (see rnn_cells.lstm_step); forward returns
    (output, (h_n, c_n))."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit (see rnn_cells.gru_step); forward returns (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)
