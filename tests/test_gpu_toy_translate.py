"""`python -m train.toy_translate --device gpu` end to end: it trains, evaluates, saves a
checkpoint that translates on the CPU, and a resumed GPU run repeats the uninterrupted
one bit for bit (the GPU random state is in the checkpoint).

On a machine without CUDA the runs use the CuPy stand-in (MINIGRAD_FAKE_GPU=1), so this
runs in every test run; where CUDA is usable they run on the real GPU."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import minigrad as mg

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--train-size", "2000", "--d-model", "32", "--ff", "64", "--layers", "1",
         "--heads", "2"]
STEPS = 30


def run_cli(*args: str, gpu: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    env.pop(mg.backend.device.FAKE_GPU_ENV, None)
    if gpu and not mg.cuda.is_available():
        env[mg.backend.device.FAKE_GPU_ENV] = "1"
    return subprocess.run([sys.executable, "-m", "train.toy_translate", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def logged_losses(out_dir: Path) -> dict[int, float]:
    records = [json.loads(line)
               for line in (out_dir / "toy_translate_log.jsonl").read_text().splitlines()]
    return {record["step"]: record["loss"] for record in records if "loss" in record}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out_dir = tmp_path_factory.mktemp("gpu_run")
    result = run_cli("--device", "gpu", "--steps", str(STEPS), *SMALL, "--out-dir", str(out_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    return out_dir, result


def test_a_gpu_run_trains_evaluates_and_saves(trained):
    out_dir, result = trained
    assert "exact match" in result.stdout and "BLEU" in result.stdout
    assert sorted(logged_losses(out_dir)) == list(range(1, STEPS + 1))
    assert (out_dir / "toy_translate.safetensors").exists()
    if not mg.cuda.is_available():
        assert "stand-in" in result.stderr  # and says that no GPU was used


def test_its_checkpoint_translates_on_the_cpu(trained):
    out_dir, _ = trained
    result = run_cli("--translate", "Je suis étudiant.", "--out-dir", str(out_dir), gpu=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "je suis étudiant"
    assert result.stdout.splitlines()[1].lstrip().startswith("1. ")
    assert result.stderr == ""  # no GPU, no stand-in


def test_a_resumed_gpu_run_repeats_the_uninterrupted_one_exactly(trained, tmp_path):
    out_dir, _ = trained
    first = run_cli("--device", "gpu", "--steps", str(STEPS // 2), *SMALL,
                    "--out-dir", str(tmp_path))
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = run_cli("--device", "gpu", "--resume", str(tmp_path / "toy_translate.safetensors"),
                      "--steps", str(STEPS), "--out-dir", str(tmp_path))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert logged_losses(tmp_path) == logged_losses(out_dir)  # bitwise: JSON floats round-trip
