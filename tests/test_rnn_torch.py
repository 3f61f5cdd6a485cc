"""nn.RNN, nn.LSTM, nn.GRU and their cells against PyTorch in float64, from the same
weights: outputs, final states and the gradients of the input, the initial states and
every parameter, for padded, batch-first, unbatched and packed inputs (lengths sorted or
not); parameter names and state dicts both ways."""
import zlib

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn.utils import rnn as rnn_utils

torch = pytest.importorskip("torch")

# float64 through a few dozen ops: rounding stays near 1e-15 of values of order one
RTOL, ATOL = 1e-10, 1e-12
INPUT_SIZE, HIDDEN_SIZE, LENGTH, BATCH = 3, 4, 5, 3
LENGTHS_SORTED, LENGTHS_UNSORTED = [5, 3, 2], [2, 5, 3]
INPUT_KINDS = ["padded", "batch_first", "unbatched", "packed_sorted", "packed_unsorted"]


def _close(ours, theirs):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=RTOL, atol=ATOL)


def _twins(kind: str, **options):
    """A PyTorch module of `kind` and a minigrad one holding its weights (float64)."""
    theirs = getattr(torch.nn, kind)(INPUT_SIZE, HIDDEN_SIZE, dtype=torch.float64, **options)
    ours = getattr(nn, kind)(INPUT_SIZE, HIDDEN_SIZE, dtype=mg.float64, **options)
    ours.load_state_dict({name: mg.tensor(value.detach().numpy())
                          for name, value in theirs.state_dict().items()})
    return ours, theirs


def _leaves(array):
    return mg.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def _inputs(input_kind: str, rng):
    """(our input, their input, our leaf, their leaf, batch, pack) for the input kind."""
    batch_first = input_kind == "batch_first"
    shape = {"unbatched": (LENGTH, INPUT_SIZE),
             "batch_first": (BATCH, LENGTH, INPUT_SIZE)}.get(input_kind,
                                                            (LENGTH, BATCH, INPUT_SIZE))
    x, x_t = _leaves(rng.standard_normal(shape))
    if not input_kind.startswith("packed"):
        return x, x_t, x, x_t, batch_first
    sorted_ = input_kind == "packed_sorted"
    lengths = LENGTHS_SORTED if sorted_ else LENGTHS_UNSORTED
    packed = rnn_utils.pack_padded_sequence(x, lengths, enforce_sorted=sorted_)
    packed_t = torch.nn.utils.rnn.pack_padded_sequence(x_t, lengths, enforce_sorted=sorted_)
    return packed, packed_t, x, x_t, False


def _initial_states(kind, layers, directions, output_size, batched, rng):
    """Random h_0 (and c_0 for an LSTM) as minigrad and PyTorch leaves."""
    shapes = [(layers * directions, BATCH, output_size)]
    if kind == "LSTM":
        shapes.append((layers * directions, BATCH, HIDDEN_SIZE))
    if not batched:
        shapes = [(shape[0], shape[2]) for shape in shapes]
    return [_leaves(rng.standard_normal(shape)) for shape in shapes]


def _run_and_compare(kind, input_kind, given_states, proj_size=0, **options):
    rng = np.random.default_rng(zlib.crc32(f"{kind} {input_kind} {given_states}".encode()))
    if proj_size:
        options["proj_size"] = proj_size
    x_in, x_in_t, x, x_t, batch_first = _inputs(input_kind, rng)
    ours, theirs = _twins(kind, batch_first=batch_first, **options)
    directions = 2 if options.get("bidirectional") else 1
    states = _initial_states(kind, options.get("num_layers", 1), directions,
                             proj_size or HIDDEN_SIZE, input_kind != "unbatched", rng)
    hx = hx_t = None
    if given_states:
        hx, hx_t = ([s[i] for s in states] for i in (0, 1))
        hx, hx_t = (tuple(hx), tuple(hx_t)) if kind == "LSTM" else (hx[0], hx_t[0])
    out, final = ours(x_in, hx)
    out_t, final_t = theirs(x_in_t, hx_t)
    if input_kind.startswith("packed"):
        assert isinstance(out, rnn_utils.PackedSequence)
        assert out.batch_sizes.tolist() == out_t.batch_sizes.tolist()
        out, out_t = out.data, out_t.data
    finals = final if kind == "LSTM" else (final,)
    finals_t = final_t if kind == "LSTM" else (final_t,)
    assert out.shape == tuple(out_t.shape)
    _close(out, out_t)
    for h, h_t in zip(finals, finals_t):
        assert h.shape == tuple(h_t.shape)
        _close(h, h_t)
    # one random upstream gradient for every output, so no output's gradient hides
    upstreams = [rng.standard_normal(tuple(o.shape)) for o in (out, *finals)]
    loss = sum((o * mg.tensor(u)).sum() for o, u in zip((out, *finals), upstreams))
    loss_t = sum((o * torch.tensor(u)).sum() for o, u in zip((out_t, *finals_t), upstreams))
    loss.backward()
    loss_t.backward()
    _close(x.grad, x_t.grad)
    if given_states:
        for h, h_t in states:
            _close(h.grad, h_t.grad)
    ours_named, theirs_named = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(ours_named) == list(theirs_named)
    for name, parameter in ours_named.items():
        assert parameter.grad is not None, name
        _close(parameter.grad, theirs_named[name].grad)


@pytest.mark.parametrize("input_kind", INPUT_KINDS)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_module_matches_torch_with_initial_states(kind, num_layers, bidirectional, input_kind):
    _run_and_compare(kind, input_kind, True, num_layers=num_layers, bidirectional=bidirectional)


@pytest.mark.parametrize("input_kind", INPUT_KINDS)
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_module_without_bias_or_initial_states_matches_torch(kind, input_kind):
    _run_and_compare(kind, input_kind, False, num_layers=2, bidirectional=True, bias=False)


@pytest.mark.parametrize("input_kind", ["padded", "unbatched", "packed_unsorted"])
def test_rnn_with_relu_matches_torch(input_kind):
    _run_and_compare("RNN", input_kind, True, num_layers=2, nonlinearity="relu")


@pytest.mark.parametrize("input_kind", ["batch_first", "packed_sorted", "packed_unsorted"])
@pytest.mark.parametrize("given_states", [False, True])
def test_lstm_with_projections_matches_torch(input_kind, given_states):
    _run_and_compare("LSTM", input_kind, given_states, proj_size=2, num_layers=2,
                     bidirectional=True)


@pytest.mark.parametrize("given_state", [False, True])
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_matches_torch(kind, bias, batched, given_state):
    rng = np.random.default_rng(sum(map(ord, kind)) + 2 * bias + batched)
    ours, theirs = _twins(kind, bias=bias)
    x, x_t = _leaves(rng.standard_normal((BATCH, INPUT_SIZE) if batched else (INPUT_SIZE,)))
    state_shape = (BATCH, HIDDEN_SIZE) if batched else (HIDDEN_SIZE,)
    states = [_leaves(rng.standard_normal(state_shape))
              for _ in range(2 if kind == "LSTMCell" else 1)]
    hx = hx_t = None
    if given_state:
        hx, hx_t = ([s[i] for s in states] for i in (0, 1))
        hx, hx_t = (tuple(hx), tuple(hx_t)) if kind == "LSTMCell" else (hx[0], hx_t[0])
    outs, outs_t = ours(x, hx), theirs(x_t, hx_t)
    outs = outs if kind == "LSTMCell" else (outs,)
    outs_t = outs_t if kind == "LSTMCell" else (outs_t,)
    upstreams = [rng.standard_normal(state_shape) for _ in outs]
    for o, o_t in zip(outs, outs_t):
        _close(o, o_t)
    sum((o * mg.tensor(u)).sum() for o, u in zip(outs, upstreams)).backward()
    sum((o * torch.tensor(u)).sum() for o, u in zip(outs_t, upstreams)).backward()
    _close(x.grad, x_t.grad)
    if given_state:
        for h, h_t in states:
            _close(h.grad, h_t.grad)
    for (name, p), (name_t, p_t) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == name_t
        _close(p.grad, p_t.grad)


@pytest.mark.parametrize("kind, options", [
    ("RNN", {"num_layers": 2, "bidirectional": True, "nonlinearity": "relu"}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
    ("LSTM", {"num_layers": 3, "bias": False}),
    ("GRU", {"bidirectional": True}),
    ("LSTMCell", {}),
    ("GRUCell", {"bias": False}),
])
def test_state_dict_loads_into_torch_and_back(kind, options):
    """Same names, shapes and order as PyTorch's; our weights give PyTorch our outputs."""
    mg.manual_seed(1)
    ours = getattr(nn, kind)(INPUT_SIZE, HIDDEN_SIZE, dtype=mg.float64, **options)
    theirs = getattr(torch.nn, kind)(INPUT_SIZE, HIDDEN_SIZE, dtype=torch.float64, **options)
    state = ours.state_dict()
    assert list(state) == list(theirs.state_dict())
    theirs.load_state_dict({name: torch.tensor(value.numpy()) for name, value in state.items()})
    cell = kind.endswith("Cell")
    x = np.random.default_rng(2).standard_normal((BATCH, INPUT_SIZE) if cell else
                                                (LENGTH, BATCH, INPUT_SIZE))
    out, out_t = ours(mg.tensor(x)), theirs(torch.tensor(x))
    first, first_t = (out, out_t) if cell and kind != "LSTMCell" else (out[0], out_t[0])
    _close(first, first_t)
    reloaded = getattr(nn, kind)(INPUT_SIZE, HIDDEN_SIZE, dtype=mg.float64, **options)
    reloaded.load_state_dict({name: mg.tensor(value.numpy())
                              for name, value in theirs.state_dict().items()})
    for (name, p), (_, q) in zip(reloaded.named_parameters(), ours.named_parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=name)
