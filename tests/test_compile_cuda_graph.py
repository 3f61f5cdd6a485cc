"""mg.compile(mode="reduce-overhead") on the GPU: each plan that can be is captured
into a CUDA graph once and launched as one call (minigrad/compile/cuda_graph.py), with
the results of the eager GPU run, bit for bit; the plans that cannot be stay stream
replays, with the same results.

On the GPU where CUDA is usable, else on the CuPy stand-in, whose graphs record the
kernels issued during a capture, leave their results unset, and run them at each launch.
"""
from __future__ import annotations

import types

import numpy as np
import pytest
from training_steps import training_step

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn, optim
from minigrad.compile import cuda_graph

pytestmark = pytest.mark.filterwarnings("error:mg.compile")


@pytest.fixture(autouse=True)
def _on_a_gpu(gpu_or_stand_in):
    """Every test here runs on a GPU: the real one, or the stand-in switched on."""
    yield


def _model(dropout: float = 0.0) -> nn.Module:
    mg.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(dropout),
                         nn.LayerNorm(16), nn.Linear(16, 4)).to("cuda")


def _inputs(count: int = 4) -> list:
    rng = np.random.default_rng(7)
    return [(mg.tensor(rng.standard_normal((5, 6)).astype(np.float32), device="cuda"),
             mg.tensor(rng.integers(0, 4, 5), device="cuda")) for _ in range(count)]


def _graphs(compiled) -> list:
    """The GraphReplay of every plan of a compiled function or module (None where the
    plan has none), forward plans before their backward."""
    function = getattr(compiled, "_compiled_forward", compiled)
    graphs = []
    for entries in function._plans.values():
        for entry in entries:
            graphs.append(entry.plan.graph)
            graphs += [backward.plan.graph for backward in entry.backwards]
    return graphs


def test_inference_is_launched_as_one_graph_with_eagers_results():
    model = _model().eval()
    forward = mg.compile(model, mode="reduce-overhead")
    results = []
    with mg.no_grad():
        for x, _ in _inputs():
            got = forward(x)
            assert np.array_equal(got.numpy(), model(x).numpy())
            results.append(got)
    [graph] = _graphs(forward)
    assert graph.reason is None and graph.captures == 1 and graph.launches == 4
    # each result is the caller's: the next launch does not overwrite it
    with mg.no_grad():
        for result, (x, _) in zip(results, _inputs(), strict=True):
            assert np.array_equal(result.numpy(), model(x).numpy())


def test_parameters_updated_in_place_are_read_by_the_next_launch():
    model = _model().eval()
    forward = mg.compile(model, mode="reduce-overhead")
    x = _inputs(1)[0][0]
    with mg.no_grad():
        forward(x)
        for p in model.parameters():
            p.mul_(1.5)
        got = forward(x)
        assert np.array_equal(got.numpy(), model(x).numpy())
    [graph] = _graphs(forward)
    assert graph.captures == 1 and graph.launches == 2


def test_a_parameter_given_another_array_is_captured_again_then_left_to_stream_replay():
    model = _model().eval()
    forward = mg.compile(model, mode="reduce-overhead")
    x = _inputs(1)[0][0]
    weight = model[0].weight
    with mg.no_grad():
        for _ in range(cuda_graph.MAX_CAPTURES + 2):
            weight.data = weight.data * 0.5  # a new array each time
            assert np.array_equal(forward(x).numpy(), model(x).numpy())
    [graph] = _graphs(forward)
    assert graph.captures == cuda_graph.MAX_CAPTURES
    assert "changed between calls" in graph.reason


@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune"])
def test_a_compiled_model_trains_with_graphs_for_its_forward_and_backward(mode):
    def train(compile_mode):
        model = _model()
        opt = optim.AdamW(model.parameters(), lr=3e-2)
        run = model if compile_mode is False else mg.compile(model, mode=compile_mode)
        losses = []
        for x, y in _inputs():
            opt.zero_grad()
            loss = F.cross_entropy(run(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.numpy().copy())
        return losses, [p.numpy().copy() for p in model.parameters()], run

    eager_losses, eager_params, _ = train(False)
    losses, params, compiled = train(mode)
    for got, want in zip(losses + params, eager_losses + eager_params, strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    forward, backward = _graphs(compiled)
    assert forward.reason is None and backward.reason is None
    # the capture's check runs the backward once more, against the eager gradients
    assert forward.launches == 4 and backward.launches == 5


def test_default_and_no_cudagraphs_modes_replay_by_stream():
    for mode in (None, "default", "max-autotune-no-cudagraphs"):
        forward = mg.compile(_model().eval(), mode=mode)
        with mg.no_grad():
            forward(_inputs(1)[0][0])
        assert _graphs(forward) == [None]


def test_a_cpu_plan_gets_no_graph():
    model = nn.Linear(6, 4)
    forward = mg.compile(model, mode="reduce-overhead")
    with mg.no_grad():
        forward(mg.ones(2, 6))
    assert _graphs(forward) == [None]


def _stream_replay_reason(fn, *args) -> str:
    """Run a reduce-overhead compiled fn three times against eager; the reason its plan
    stays a stream replay."""
    compiled = mg.compile(fn, mode="reduce-overhead")
    for _ in range(3):
        got, want = compiled(*args), fn(*args)
        assert np.array_equal(np.asarray(got.numpy()), np.asarray(want.numpy()))
    [graph] = _graphs(compiled)
    assert graph.launches == 0
    return graph.reason


def test_random_draws_keep_a_plan_out_of_a_graph():
    model = _model(dropout=0.5)
    x = _inputs(1)[0][0]

    def forward(x):
        with mg.no_grad():
            return model(x)

    mg.manual_seed(3)
    compiled = mg.compile(forward, mode="reduce-overhead")
    got = [compiled(x).numpy() for _ in range(3)]
    mg.manual_seed(3)
    want = [forward(x).numpy() for _ in range(3)]
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)
    assert not np.array_equal(got[0], got[1])  # new masks at every call
    [graph] = _graphs(compiled)
    assert "draws random numbers" in graph.reason and graph.launches == 0


def test_a_whole_training_step_with_its_optimizer_stays_a_stream_replay():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    step = mg.compile(training_step(model, opt, F.cross_entropy), mode="reduce-overhead")
    for x, y in _inputs(3):
        step(x, y)
    graphs = _graphs(step)
    assert all(graph.launches == 0 for graph in graphs)
    assert any("calls Python" in graph.reason for graph in graphs)


def test_values_read_into_python_are_checked_before_each_launch():
    """Indexing reads the indices' range on the host: those checks run before each
    launch, on the call's indices, and one that fails stops the call before the graph
    runs; the eager step then raises eager's error."""
    table = mg.arange(12.0, device="cuda").reshape(4, 3)
    compiled = mg.compile(lambda t, i: t[i] * 2, mode="reduce-overhead")
    for index in ([2, 0], [1, 3], [3, 3]):
        i = mg.tensor(index, device="cuda")
        assert np.array_equal(compiled(table, i).numpy(), (table[i] * 2).numpy())
    [graph] = _graphs(compiled)
    assert graph.reason is None and graph.launches == 3
    with pytest.raises(IndexError):
        compiled(table, mg.tensor([4, 0], device="cuda"))
    assert graph.launches == 3


def test_a_check_that_depends_on_a_write_keeps_a_plan_out_of_a_graph():
    def clamp_then_index(t, i):
        j = i + 0
        j.clamp_(0, 3)  # an in-place write the range check reads
        return t[j] * 2

    table = mg.arange(12.0, device="cuda").reshape(4, 3)
    i = mg.tensor([5, 1], device="cuda")
    compiled = mg.compile(clamp_then_index, mode="reduce-overhead")
    for _ in range(2):
        assert np.array_equal(compiled(table, i).numpy(),
                              clamp_then_index(table, i).numpy())
    [graph] = _graphs(compiled)
    assert graph.launches == 0 and "writes into an array" in graph.reason


def test_a_write_into_an_argument_keeps_a_plan_out_of_a_graph():
    def bump(x):
        with mg.no_grad():
            x.add_(1.0)
        return x * 2

    x = mg.zeros(3, device="cuda")
    compiled = mg.compile(bump, mode="reduce-overhead")
    for calls in range(1, 4):
        compiled(x)
        assert np.array_equal(x.numpy(), np.full(3, calls, np.float32))
    [graph] = _graphs(compiled)
    assert "writes into an array the call hands in" in graph.reason


def test_results_sharing_memory_keep_a_plan_out_of_a_graph():
    def pair(x):
        y = x * 2
        return y, y.reshape(-1)

    x = mg.ones(2, 3, device="cuda")
    compiled = mg.compile(pair, mode="reduce-overhead")
    for _ in range(2):
        y, flat = compiled(x)
        y.add_(1.0)  # the view sees it, as eager's does
        assert np.array_equal(flat.numpy(), np.full(6, 3.0, np.float32))
    [graph] = _graphs(compiled)
    assert "share memory" in graph.reason


def test_debug_output_says_which_plans_are_graphs(monkeypatch, capsys):
    monkeypatch.setenv("MINIGRAD_DEBUG", "compile")
    model = _model().eval()
    forward = mg.compile(model, mode="reduce-overhead")
    with mg.no_grad():
        forward(_inputs(1)[0][0])
        forward(_inputs(1)[0][0])
    err = capsys.readouterr().err
    assert err.count("CUDA graph captured") == 1


def test_a_capture_that_fails_is_tried_once_more_then_left_to_stream_replay(monkeypatch):
    """A first capture may fail where a kernel loads or a library sets itself up inside
    it; the stream replay of that call does both, so the next call captures again."""
    real = cuda_graph._split

    def failing(times: int):
        def split(plan, cupy):
            checks, replay = real(plan, cupy)
            failures = []

            def function(slots):  # the replay, failing its first `times` captures
                if len(failures) < times:
                    failures.append(1)
                    raise RuntimeError("operation not permitted when stream is capturing")
                return replay.function(slots)

            return checks, types.SimpleNamespace(function=function, loaded=replay.loaded,
                                                 stored=replay.stored,
                                                 dropped_loaded=replay.dropped_loaded)
        return split

    for times, launches in ((1, 2), (2, 0)):
        monkeypatch.setattr(cuda_graph, "_split", failing(times))
        model = _model().eval()
        forward = mg.compile(model, mode="reduce-overhead")
        with mg.no_grad():
            for x, _ in _inputs(3):
                assert np.array_equal(forward(x).numpy(), model(x).numpy())
        [graph] = _graphs(forward)
        assert graph.launches == launches
        assert (graph.reason is None) == (times == 1)


def test_the_transformer_runs_as_graphs_in_training_and_inference():
    from models import Transformer

    def run(mode):
        mg.manual_seed(0)
        model = Transformer(20, 20, d_model=32, nhead=4, num_encoder_layers=1,
                            num_decoder_layers=1, dim_feedforward=64, dropout=0.0).to("cuda")
        opt = optim.Adam(model.parameters(), lr=1e-3)
        run_model = model if mode is None else mg.compile(model, mode=mode)
        rng = np.random.default_rng(0)
        src = mg.tensor(rng.integers(1, 20, (4, 7)), device="cuda")
        tgt = mg.tensor(rng.integers(1, 20, (4, 6)), device="cuda")
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(run_model(src, tgt[:, :-1]).reshape(-1, 20),
                                   tgt[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
            losses.append(loss.numpy().copy())
        model.eval()
        with mg.no_grad():
            losses += [run_model(src, tgt[:, :-1]).numpy() for _ in range(2)]
        return losses, run_model

    eager, _ = run(None)
    compiled, model = run("reduce-overhead")
    for got, want in zip(compiled, eager, strict=True):
        assert np.array_equal(got, want)
    training_forward, backward, inference = _graphs(model)
    assert training_forward.launches == 3 and inference.launches == 2
    # the embedding's gradient, a sorted segment sum, reads nothing back to the host
    assert backward.reason is None and backward.launches == 4
