"""The benchmarks' rival models (benchmarks/rivals/) are the model of models/, so that
bench_train compares like with like; and the benchmark scripts run end to end (on tiny
sizes: these are not timed tests)."""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

import minigrad as mg
from benchmarks import bench_overhead, bench_train
from models import Transformer

CONFIG = bench_train.Config("test", vocab=30, d_model=16, nhead=4, layers=2, ff=24, batch=3,
                            length=5, steps=1)


def minigrad_model() -> Transformer:
    mg.manual_seed(0)
    return Transformer(CONFIG.vocab, CONFIG.vocab, d_model=CONFIG.d_model, nhead=CONFIG.nhead,
                       num_encoder_layers=CONFIG.layers, num_decoder_layers=CONFIG.layers,
                       dim_feedforward=CONFIG.ff, dropout=CONFIG.dropout)


def test_torch_rival_has_the_same_parameters():
    pytest.importorskip("torch")
    from benchmarks.rivals.torch_model import TranslationModel

    ours = sum(p.array.size for p in minigrad_model().parameters())
    theirs = sum(p.numel() for p in TranslationModel(CONFIG).parameters())
    # nn.Transformer's LayerNorm after each stack (a weight and a bias) is its only extra
    assert theirs - ours == 2 * 2 * CONFIG.d_model


def tinygrad_name(minigrad_name: str) -> str:
    """models.Transformer's parameter names in benchmarks/rivals/tinygrad_model.py."""
    name = minigrad_name.replace(".embedding.", ".").replace(".layers.", ".")
    return re.sub(r"residuals\.(\d+)\.norm", r"norms.\1", name)


def test_tinygrad_rival_computes_the_same_logits():
    tinygrad = pytest.importorskip("tinygrad")
    from tinygrad import nn

    from benchmarks.rivals.tinygrad_model import TranslationModel

    try:
        tinygrad.Tensor([1.0]).realize()
    except RuntimeError as exc:  # tinygrad's CPU backend compiles with clang
        pytest.skip(f"tinygrad has no usable device here: {exc}")
    ours = minigrad_model()
    theirs = TranslationModel(CONFIG)
    weights = {tinygrad_name(name): tinygrad.Tensor(value.numpy())
               for name, value in ours.state_dict().items() if name != "positional.pe"}
    weights["positions"] = nn.state.get_state_dict(theirs)["positions"]
    nn.state.load_state_dict(theirs, weights, verbose=False)
    src, tgt = bench_train.make_batch(CONFIG)
    src[0, -2:] = 0  # padding, so the masks matter
    tgt[1, -1] = 0
    ours.eval()
    expected = ours(mg.tensor(src), mg.tensor(tgt)).numpy()
    got = theirs(tinygrad.Tensor(src.astype(np.int32)),
                 tinygrad.Tensor(tgt.astype(np.int32))).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_bench_train_measures_each_framework():
    frameworks = ["minigrad"] + [f for f in ("torch",) if bench_train.installed(f, "cpu")]
    times = bench_train.time_steps(CONFIG, "cpu", frameworks, warmup=1)
    assert set(times) == set(frameworks) and all(t > 0 for t in times.values())
    rows = bench_train.table_rows(CONFIG, times, {})
    assert [row[2] for row in rows] == frameworks


def test_bench_train_steps_lower_the_loss():
    step = bench_train.make_step("minigrad", replace(CONFIG, dropout=0.0), "cpu")
    losses = [step() for _ in range(5)]
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("framework", ["minigrad", "torch"])
def test_bench_overhead_cases_compute_what_numpy_computes(framework):
    """Every case of every framework gives NumPy's hand-written outputs and gradients, so
    the table times the same work."""
    lib = mg if framework == "minigrad" else pytest.importorskip("torch")
    expected = {name: case() for name, case in bench_overhead.numpy_cases(
        bench_overhead.inputs()).items()}
    got = {name: case() for name, case in bench_overhead.framework_cases(
        lib, bench_overhead.inputs()).items()}
    assert set(got) == set(expected)
    for name, values in expected.items():
        values = values if isinstance(values, tuple) else (values,)
        results = got[name] if isinstance(got[name], tuple) else (got[name],)
        assert len(results) == len(values), name
        for result, value in zip(results, values):
            result = result.detach().numpy() if framework == "torch" else result.numpy()
            np.testing.assert_allclose(result, value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_bench_train_compiled_step_trains_as_the_eager_one():
    losses = []
    for name in ("minigrad", "minigrad-compiled"):
        step = bench_train.make_step(name, CONFIG, "cpu")
        mg.manual_seed(1)  # the same dropout masks
        losses.append([step() for _ in range(4)])
    assert losses[1] == losses[0]
