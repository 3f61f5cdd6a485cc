"""nn.RNN, nn.LSTM, nn.GRU and the cells without an oracle: parameter names, shapes and
initialisation, the layouts agreeing with each other, a packed batch agreeing with each
sequence run alone, dropout between layers only, the errors and the GPU."""
import math

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from minigrad.nn.utils import rnn as rnn_utils

# float64 through a few dozen ops: rounding stays near 1e-15 of values of order one
RTOL, ATOL = 1e-12, 1e-13
KINDS = ["RNN", "LSTM", "GRU"]


def _close(ours, expected):
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=RTOL, atol=ATOL)


def _states(final) -> tuple:
    return final if isinstance(final, tuple) else (final,)


def test_lstm_parameters_have_pytorchs_names_shapes_and_order():
    lstm = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    shapes = {name: tuple(p.shape) for name, p in lstm.named_parameters()}
    expected = {}
    for layer, features in ((0, 3), (1, 4)):
        for suffix in ("", "_reverse"):
            expected.update({f"weight_ih_l{layer}{suffix}": (20, features),
                             f"weight_hh_l{layer}{suffix}": (20, 2),
                             f"bias_ih_l{layer}{suffix}": (20,),
                             f"bias_hh_l{layer}{suffix}": (20,),
                             f"weight_hr_l{layer}{suffix}": (2, 5)})
    assert list(shapes.items()) == list(expected.items())
    assert [len(weights) for weights in lstm.all_weights] == [5] * 4


@pytest.mark.parametrize("kind, gates", [("RNN", 1), ("GRU", 3)])
def test_parameters_without_bias(kind, gates):
    module = getattr(nn, kind)(3, 4, num_layers=2, bias=False)
    assert {name: tuple(p.shape) for name, p in module.named_parameters()} == {
        "weight_ih_l0": (gates * 4, 3), "weight_hh_l0": (gates * 4, 4),
        "weight_ih_l1": (gates * 4, 4), "weight_hh_l1": (gates * 4, 4)}


@pytest.mark.parametrize("kind", KINDS + ["RNNCell", "LSTMCell", "GRUCell"])
def test_every_parameter_is_uniform_within_one_over_sqrt_hidden_size(kind):
    """U(-k, k), k = 1/sqrt(hidden_size), for weights and biases alike (not Linear's
    1/sqrt(fan_in): the input size differs here)."""
    mg.manual_seed(0)
    hidden_size = 16
    module = getattr(nn, kind)(100, hidden_size)
    bound = 1 / math.sqrt(hidden_size)
    for name, parameter in module.named_parameters():
        largest = np.abs(parameter.numpy()).max()
        # at least 16 draws: all of them below k/2 has odds 2^-16
        assert 0.5 * bound < largest <= bound, name
    pooled = np.concatenate([p.numpy().ravel() for p in module.parameters()])
    # the standard deviation of U(-k, k) is k / sqrt(3)
    assert abs(pooled.std() - bound / math.sqrt(3)) < 0.05 * bound / math.sqrt(3)


def test_repr_is_pytorchs():
    assert repr(nn.LSTM(4, 3, num_layers=2, bias=False, batch_first=True, dropout=0.1,
                        bidirectional=True, proj_size=2)) == (
        "LSTM(4, 3, proj_size=2, num_layers=2, bias=False, batch_first=True, dropout=0.1, "
        "bidirectional=True)")
    assert repr(nn.GRU(4, 3)) == "GRU(4, 3)"
    assert repr(nn.RNNCell(4, 3, nonlinearity="relu")) == "RNNCell(4, 3, nonlinearity=relu)"
    assert repr(nn.GRUCell(4, 3, bias=False)) == "GRUCell(4, 3, bias=False)"


@pytest.mark.parametrize("kind", KINDS)
def test_batch_first_and_unbatched_inputs_agree_with_time_major(kind):
    rng = np.random.default_rng(0)
    module = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, dtype=mg.float64)
    x = mg.tensor(rng.standard_normal((5, 2, 3)))
    out, final = module(x)
    module.batch_first = True
    out_bf, final_bf = module(x.transpose(0, 1))
    _close(out_bf.transpose(0, 1), out)
    for h, h_bf in zip(_states(final), _states(final_bf)):
        _close(h_bf, h)
    module.batch_first = False
    out_one, final_one = module(x[:, 1])
    assert out_one.shape == (5, 8)
    _close(out_one, out[:, 1])
    for h, h_one in zip(_states(final), _states(final_one)):
        _close(h_one, h[:, 1])


@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_packed_batch_equals_each_sequence_run_alone(kind, enforce_sorted):
    """Each sequence's outputs and its final state (h_n from its own last step, in both
    directions) are those of the sequence run by itself."""
    rng = np.random.default_rng(1)
    lengths = [6, 4, 4, 1] if enforce_sorted else [4, 1, 6, 4]
    module = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, dtype=mg.float64)
    x = mg.tensor(rng.standard_normal((6, 4, 3)))
    h0 = [mg.tensor(rng.standard_normal((4, 4, 4))) for _ in range(2 if kind == "LSTM" else 1)]
    hx = tuple(h0) if kind == "LSTM" else h0[0]
    packed = rnn_utils.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
    out, final = module(packed, hx)
    padded, out_lengths = rnn_utils.pad_packed_sequence(out)
    assert out_lengths.tolist() == lengths
    for b, length in enumerate(lengths):
        alone_hx = tuple(h[:, b] for h in h0) if kind == "LSTM" else h0[0][:, b]
        alone, alone_final = module(x[:length, b], alone_hx)
        _close(padded[:length, b], alone)
        assert not padded[length:, b].numpy().any()
        for h, h_alone in zip(_states(final), _states(alone_final)):
            _close(h[:, b], h_alone)


@pytest.mark.parametrize("kind", KINDS)
def test_dropout_applies_between_layers_in_training_only(kind):
    """Training: the output is layer 2 run on a dropout of layer 1's output (with the same
    random draws); h_n holds each layer's own states. eval(): no dropout at all."""
    rng = np.random.default_rng(2)
    two_layers = getattr(nn, kind)(3, 4, num_layers=2, dropout=0.5, dtype=mg.float64)
    first = getattr(nn, kind)(3, 4, dtype=mg.float64)
    second = getattr(nn, kind)(4, 4, dtype=mg.float64)
    state = two_layers.state_dict()
    first.load_state_dict({n: v for n, v in state.items() if n.endswith("_l0")})
    second.load_state_dict({n[:-1] + "0": v for n, v in state.items() if n.endswith("_l1")})
    x = mg.tensor(rng.standard_normal((5, 2, 3)))
    mg.manual_seed(7)
    out, final = two_layers(x)
    mg.manual_seed(7)
    hidden, first_final = first(x)
    expected, second_final = second(F.dropout(hidden, 0.5, True))
    _close(out, expected)
    for h, h1, h2 in zip(_states(final), _states(first_final), _states(second_final)):
        _close(h, mg.cat([h1, h2]))
    without_dropout, _ = second(hidden)
    assert np.abs(out.numpy() - without_dropout.numpy()).max() > 1e-3
    two_layers.eval()
    _close(two_layers(x)[0], without_dropout)


def test_dropout_with_one_layer_warns_and_never_drops():
    with pytest.warns(UserWarning, match="dropout option adds dropout after all but last"):
        rnn = nn.RNN(3, 4, dropout=0.5, dtype=mg.float64)
    x = mg.tensor(np.random.default_rng(3).standard_normal((5, 2, 3)))
    out, _ = rnn(x)
    rnn.eval()
    _close(out, rnn(x)[0])


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_state_defaults_to_zeros_and_unbatched_agrees(kind):
    rng = np.random.default_rng(4)
    cell = getattr(nn, kind)(3, 4, dtype=mg.float64)
    x = mg.tensor(rng.standard_normal((2, 3)))
    zeros = mg.zeros(2, 4, dtype=mg.float64)
    given = cell(x, (zeros, zeros) if kind == "LSTMCell" else zeros)
    default = cell(x)
    one = cell(x[1])
    for h, h_default, h_one in zip(_states(given), _states(default), _states(one)):
        _close(h_default, h)
        _close(h_one, h[1])


def test_lstm_cell_runs_an_lstm_step_by_step():
    """A one-layer LSTM is its cell applied at each step, the same weights under the
    same names."""
    rng = np.random.default_rng(5)
    lstm = nn.LSTM(3, 4, dtype=mg.float64)
    cell = nn.LSTMCell(3, 4, dtype=mg.float64)
    cell.load_state_dict({name[:-3]: value for name, value in lstm.state_dict().items()})
    x = mg.tensor(rng.standard_normal((5, 2, 3)))
    out, (h_n, c_n) = lstm(x)
    state = None
    for t in range(5):
        state = cell(x[t], state)
        _close(out[t], state[0])
    _close(h_n[0], state[0])
    _close(c_n[0], state[1])


def test_flatten_parameters_changes_nothing():
    lstm = nn.LSTM(3, 4)
    before = {name: p.numpy().copy() for name, p in lstm.named_parameters()}
    assert lstm.flatten_parameters() is None
    for name, p in lstm.named_parameters():
        np.testing.assert_array_equal(p.numpy(), before[name])


ERRORS = [
    (lambda: nn.RNN(4, 3, nonlinearity="sigmoid"), ValueError,
     "RNN: Unknown nonlinearity 'sigmoid'"),
    (lambda: nn.RNNCell(4, 3, nonlinearity="sigmoid"), ValueError,
     "RNNCell: Unknown nonlinearity 'sigmoid'"),
    (lambda: nn.GRU(4, 3, dropout=1.5), ValueError, r"GRU: dropout should be .* \[0, 1\]"),
    (lambda: nn.GRU(4, 3, dropout=True), ValueError, r"GRU: dropout should be .* \[0, 1\]"),
    (lambda: nn.LSTM(4, 0), ValueError, "LSTM: hidden_size must be greater than zero"),
    (lambda: nn.LSTM(0, 3), ValueError, "LSTM: input_size must be greater than zero"),
    (lambda: nn.LSTM(4, 3, num_layers=0), ValueError, "num_layers must be greater than zero"),
    (lambda: nn.LSTM(4, 3.0), TypeError, "LSTM: hidden_size must be an integer"),
    (lambda: nn.LSTM(4, 3, proj_size=3), ValueError, "proj_size has to be smaller than"),
    (lambda: nn.RNNBase("GRU", 4, 3, proj_size=2), ValueError,
     "proj_size argument is only supported for LSTM"),
    (lambda: nn.LSTM(4, 3)(mg.zeros(5, 2, 5)), RuntimeError,
     r"LSTM: input.size\(-1\) must be equal to input_size. Expected 4, got 5"),
    (lambda: nn.LSTM(4, 3)(mg.zeros(5, 2, 4, 1)), ValueError,
     "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    (lambda: nn.GRU(4, 3)(mg.zeros(0, 2, 4)), RuntimeError,
     "GRU: Expected sequence length to be larger than 0"),
    (lambda: nn.LSTM(4, 3)(mg.zeros(5, 2, 4, dtype=mg.float64)), ValueError,
     r"LSTM input dtype \(minigrad.float64\) does not match weight dtype "
     r"\(minigrad.float32\)"),
    (lambda: nn.LSTM(4, 3)(mg.zeros(5, 2, 4), (mg.zeros(1, 3, 3), mg.zeros(1, 2, 3))),
     RuntimeError, r"LSTM: Expected hidden\[0\] size \(1, 2, 3\), got \[1, 3, 3\]"),
    (lambda: nn.LSTM(4, 3)(mg.zeros(5, 2, 4), (mg.zeros(1, 2, 3), mg.zeros(1, 2, 2))),
     RuntimeError, r"LSTM: Expected hidden\[1\] size \(1, 2, 3\), got \[1, 2, 2\]"),
    (lambda: nn.LSTM(4, 3, proj_size=2)(mg.zeros(5, 2, 4), (mg.zeros(1, 2, 3),
                                                             mg.zeros(1, 2, 3))),
     RuntimeError, r"LSTM: Expected hidden\[0\] size \(1, 2, 2\), got \[1, 2, 3\]"),
    (lambda: nn.LSTM(4, 3)(mg.zeros(5, 2, 4), (mg.zeros(2, 3), mg.zeros(1, 2, 3))),
     RuntimeError, r"For batched 3-D input, hx and cx should also be 3-D but got "
                   r"\(2-D, 3-D\) tensors"),
    (lambda: nn.LSTM(4, 3)(mg.zeros(5, 2, 4), mg.zeros(1, 2, 3)), TypeError,
     r"LSTM: hx must be a pair \(h_0, c_0\)"),
    (lambda: nn.GRU(4, 3, num_layers=2)(mg.zeros(5, 2, 4), mg.zeros(1, 2, 3)), RuntimeError,
     r"GRU: Expected hidden size \(2, 2, 3\), got \[1, 2, 3\]"),
    (lambda: nn.GRU(4, 3)(mg.zeros(5, 4), mg.zeros(1, 2, 3)), RuntimeError,
     "GRU: For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    (lambda: nn.RNN(4, 3)(mg.zeros(5, 2, 4), (mg.zeros(1, 2, 3),)), TypeError,
     "RNN: hx must be a Tensor, got tuple"),
    (lambda: nn.LSTMCell(4, 3)(mg.zeros(2, 5)), RuntimeError,
     "LSTMCell: input has inconsistent input_size: got 5 expected 4"),
    (lambda: nn.GRUCell(4, 3)(mg.zeros(2, 4, 1)), ValueError,
     "GRUCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda: nn.LSTMCell(4, 3)(mg.zeros(2, 4), (mg.zeros(3, 3), mg.zeros(2, 3))),
     RuntimeError, "LSTMCell: Input batch size 2 doesn't match hidden0 batch size 3"),
    (lambda: nn.LSTMCell(4, 3)(mg.zeros(2, 4), (mg.zeros(2, 3), mg.zeros(2, 2))),
     RuntimeError, "LSTMCell: hidden1 has inconsistent hidden_size: got 2, expected 3"),
    (lambda: nn.RNNCell(4, 3)(mg.zeros(2, 4), mg.zeros(2, 3, 1)), ValueError,
     "RNNCell: Expected hidden to be 1D or 2D, got 3D instead"),
    (lambda: nn.GRUCell(4, 3)(mg.zeros(4), mg.zeros(2, 3)), RuntimeError,
     r"GRUCell: for unbatched 1-D input, hidden should be 1-D too, got shape \(2, 3\)"),
    (lambda: nn.LSTMCell(4, 3)(mg.zeros(2, 4), mg.zeros(2, 3)), TypeError,
     r"LSTMCell: hx must be a pair \(h_0, c_0\)"),
    (lambda: nn.RNNCell(4, 3)(mg.zeros(2, 4, dtype=mg.float64)), RuntimeError,
     r"RNNCell input dtype \(minigrad.float64\) does not match weight dtype"),
]


@pytest.mark.parametrize("make, error, message", ERRORS)
def test_misuse_raises_pytorchs_error_naming_the_module(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.skipif(not mg.cuda.is_available(), reason="needs CUDA (or MINIGRAD_FAKE_GPU=1)")
@pytest.mark.parametrize("kind", KINDS)
def test_gpu_matches_cpu_on_a_packed_unsorted_batch(kind):
    rng = np.random.default_rng(6)
    module = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, dtype=mg.float64)
    on_gpu = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, dtype=mg.float64)
    on_gpu.load_state_dict(module.state_dict())
    on_gpu.to("gpu")
    x = rng.standard_normal((5, 3, 3))
    results = []
    for device, model in (("cpu", module), ("gpu", on_gpu)):
        leaf = mg.tensor(x, device=device, requires_grad=True)
        packed = rnn_utils.pack_padded_sequence(leaf, [2, 5, 3], enforce_sorted=False)
        out, final = model(packed)
        assert out.data.device == device and out.sorted_indices.device == device
        loss = (out.data ** 2).sum() + sum((h ** 2).sum() for h in _states(final))
        loss.backward()
        results.append([out.data, *_states(final), leaf.grad,
                        *(p.grad for p in model.parameters())])
    for on_cpu, gpu_result in zip(*results):
        _close(gpu_result.cpu(), on_cpu)
