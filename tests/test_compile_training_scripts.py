"""`--compile` in the training commands: the model's forward compiled in place trains to
the weights and losses of the eager run, bit for bit, and the checkpoint keeps the
model's own names."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from train.arguments import compiles, parse_args

ROOT = Path(__file__).resolve().parents[1]
TINY_TRANSLATE = ["--train-size", "300", "--d-model", "16", "--heads", "2", "--layers", "1",
                  "--ff", "32", "--batch-size", "16", "--warmup", "10", "--dropout", "0.1",
                  "--eval-every", "5", "--beam-size", "2", "--top-beams", "1",
                  "--steps", "8"]


def _run(module: str, *args: str, **environment: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", **environment}
    result = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _same_checkpoints(first: Path, second: Path, key: str) -> None:
    want, got = mg.load(str(first))[key], mg.load(str(second))[key]
    assert list(got) == list(want)
    for name in want:
        assert np.array_equal(got[name].numpy(), want[name].numpy()), name


def test_toy_translate_compiles_by_default_and_trains_as_eagerly(tmp_path):
    eager, compiled = tmp_path / "eager", tmp_path / "compiled"
    _run("train.toy_translate", *TINY_TRANSLATE, "--no-compile", "--out-dir", str(eager))
    result = _run("train.toy_translate", *TINY_TRANSLATE, "--out-dir", str(compiled),
                  MINIGRAD_DEBUG="compile")  # which prints each plan made
    assert result.stderr.count("external slots") >= 2
    assert "runs eagerly" not in result.stderr  # the shapes past the plans kept, quietly
    log = "toy_translate_log.jsonl"
    records = [json.loads(line) for line in (compiled / log).read_text().splitlines()]
    assert records == [json.loads(line) for line in (eager / log).read_text().splitlines()]
    _same_checkpoints(eager / "toy_translate.safetensors",
                      compiled / "toy_translate.safetensors", "model")


def test_digits_with_compile_trains_as_eagerly(tmp_path):
    pytest.importorskip("sklearn")
    eager, compiled = tmp_path / "eager", tmp_path / "compiled"
    _run("train.digits", "--epochs", "1", "--out-dir", str(eager))
    result = _run("train.digits", "--epochs", "1", "--compile", "--out-dir", str(compiled))
    assert "runs eagerly" not in result.stderr
    _same_checkpoints(eager / "digits.safetensors", compiled / "digits.safetensors", "model")


@pytest.mark.parametrize(("flags", "compiled"), [
    ([], True), (["--compile"], True), (["--no-compile"], False),
    (["--device", "gpu"], False), (["--device", "gpu", "--compile"], True),
    (["--amp"], False), (["--distributed"], False), (["--amp", "--compile"], True),
])
def test_toy_translate_compiles_on_the_cpu_unless_told_otherwise(flags, compiled):
    assert compiles(parse_args(flags)) is compiled
