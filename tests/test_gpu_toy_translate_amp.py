"""`python -m train.toy_translate --device gpu --amp`: mixed-precision training end to end
(the CuPy stand-in where there is no GPU, as in tests/test_gpu_toy_translate.py). The loss
falls, the GradScaler's state is in the checkpoint, and a resumed run repeats the
uninterrupted one bit for bit, scaler included."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_gpu_toy_translate import logged_losses, run_cli

import minigrad as mg
from train.checkpoint import new_train_state, save_run
from train.config import DEFAULTS
from train.data import make_dataset

STEPS = 16
TINY = ["--train-size", "1000", "--d-model", "32", "--ff", "64", "--layers", "1",
        "--heads", "2", "--batch-size", "64", "--warmup", "4", "--eval-every", str(STEPS // 2),
        "--beam-size", "1", "--top-beams", "1"]


def saved_run(out_dir: Path) -> dict:
    return mg.load(str(out_dir / "toy_translate.safetensors"), map_location="cpu")


def validation_losses(out_dir: Path) -> list[float]:
    lines = (out_dir / "toy_translate_log.jsonl").read_text().splitlines()
    return [record["val_loss"] for record in map(json.loads, lines) if "val_loss" in record]


def _run(out_dir: Path, *flags: str) -> Path:
    result = run_cli("--device", "gpu", "--steps", str(STEPS), *TINY, *flags,
                     "--out-dir", str(out_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    return out_dir


@pytest.fixture(scope="module")
def amp_run(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("amp_run"), "--amp")


def test_an_amp_run_learns_and_saves_its_scaler(amp_run, tmp_path):
    losses = logged_losses(amp_run)
    assert sorted(losses) == list(range(1, STEPS + 1))
    halfway, final = validation_losses(amp_run)
    assert final < halfway < losses[1]
    # the float32 run's losses, as float16 rounds them: each step's loss passes through
    # some 8 roundings of relative size 2^-11 (weights, activations, gradients)
    float32_losses = logged_losses(_run(tmp_path))
    differences = np.array([losses[s] - float32_losses[s] for s in losses])
    assert np.abs(differences).max() <= 2.0**-8 * max(float32_losses.values())
    assert np.abs(differences).min() > 0
    scaler = saved_run(amp_run)["scaler"]
    # no float16 overflow in so short a run: every step was taken, the scale kept
    assert scaler == {"scale": 2.0**16, "growth_factor": 2.0, "backoff_factor": 0.5,
                      "growth_interval": 2000, "_growth_tracker": STEPS}


def test_a_resumed_amp_run_repeats_the_uninterrupted_one_exactly(amp_run, tmp_path):
    first = run_cli("--device", "gpu", "--amp", "--steps", str(STEPS // 2), *TINY,
                    "--out-dir", str(tmp_path))
    assert first.returncode == 0, first.stderr[-3000:]
    # no --amp: a resumed run keeps the checkpoint's precision
    resumed = run_cli("--device", "gpu", "--resume", str(tmp_path / "toy_translate.safetensors"),
                      "--steps", str(STEPS), "--out-dir", str(tmp_path))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert logged_losses(tmp_path) == logged_losses(amp_run)  # JSON floats round-trip
    assert saved_run(tmp_path)["scaler"] == saved_run(amp_run)["scaler"]


def test_amp_cannot_turn_a_float32_run_mixed(tmp_path):
    data = make_dataset(seed=0, n_train=1000)
    config = DEFAULTS.updated(train_size=1000, d_model=16, ff=32, layers=1, heads=2)
    path = tmp_path / "float32.safetensors"
    save_run(str(path), new_train_state(config, data.src_vocab, data.tgt_vocab, "cpu"),
             config, data.src_vocab, data.tgt_vocab)
    assert "scaler" not in mg.load(str(path))
    resumed = run_cli("--amp", "--resume", str(path), "--steps", "2", "--out-dir",
                      str(tmp_path), gpu=False)
    assert resumed.returncode == 2
    assert "argument --amp: the checkpoint's run was trained in float32" in resumed.stderr
    translating = run_cli("--amp", "--translate", "merci", gpu=False)
    assert translating.returncode == 2
    assert "argument --amp: not allowed with --translate" in translating.stderr
