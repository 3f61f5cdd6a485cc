"""`python -m train.toy_translate` end to end, as a user runs it (tiny configuration):
training lowers the loss, a resumed run repeats an uninterrupted one bit for bit,
translation works and refuses unknown words clearly, and --device gpu without CUDA
fails with one line. Plus the batching that makes exact resumption possible."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from train.loop import batch_stream, epoch_batches

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--train-size", "300", "--d-model", "16", "--heads", "2", "--layers", "1",
        "--ff", "32", "--batch-size", "16", "--warmup", "10", "--lr-factor", "0.5",
        "--dropout", "0.1", "--eval-every", "10", "--beam-size", "2", "--top-beams", "2"]
STEPS = 30


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "train.toy_translate", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


def logged_losses(out_dir: Path) -> dict[int, float]:
    lines = (out_dir / "toy_translate_log.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    return {record["step"]: record["loss"] for record in records if "loss" in record}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """The out-dir of one uninterrupted tiny run of STEPS steps."""
    out_dir = tmp_path_factory.mktemp("uninterrupted")
    result = run_cli(*TINY, "--steps", str(STEPS), "--out-dir", str(out_dir))
    assert result.returncode == 0, result.stderr
    return out_dir


def test_training_lowers_the_loss_and_reports(trained):
    losses = logged_losses(trained)
    assert sorted(losses) == list(range(1, STEPS + 1))
    first, last = [losses[s] for s in range(1, 6)], [losses[s] for s in range(STEPS - 4, STEPS + 1)]
    assert sum(last) / 5 < sum(first) / 5 - 0.3
    assert (trained / "toy_translate.safetensors").exists()
    assert (trained / "toy_translate_loss.png").stat().st_size > 0
    records = [json.loads(line) for line in
               (trained / "toy_translate_log.jsonl").read_text().splitlines()]
    assert {"test_exact_match", "test_bleu"} <= records[-1].keys()


def test_resume_repeats_the_uninterrupted_run_exactly(trained, tmp_path):
    first = run_cli(*TINY, "--steps", str(STEPS // 2), "--out-dir", str(tmp_path))
    assert first.returncode == 0, first.stderr
    resumed = run_cli("--resume", str(tmp_path / "toy_translate.safetensors"),
                      "--steps", str(STEPS), "--out-dir", str(tmp_path))
    assert resumed.returncode == 0, resumed.stderr
    assert logged_losses(tmp_path) == logged_losses(trained)  # bitwise: JSON floats round-trip


def test_translate_prints_beams_and_plots_attention(trained, tmp_path):
    png = tmp_path / "attention.png"
    result = run_cli("--translate", "Je suis étudiant.", "--out-dir", str(trained),
                     "--top-beams", "2", "--plot-attention", str(png))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "je suis étudiant"
    assert lines[1].lstrip().startswith("1. ") and lines[2].lstrip().startswith("2. ")
    assert png.stat().st_size > 0


def test_translate_names_unknown_words_in_one_line(trained):
    result = run_cli("--translate", "je suis astronaute à Paris", "--out-dir", str(trained))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "'astronaute'" in result.stderr and "'paris'" in result.stderr


def test_translate_without_a_checkpoint_says_so(tmp_path):
    result = run_cli("--translate", "merci", "--out-dir", str(tmp_path))
    assert result.returncode == 1
    assert "no checkpoint" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.usefixtures("without_cuda")
def test_gpu_without_cuda_exits_2_with_one_line(tmp_path):
    result = run_cli("--device", "gpu", "--out-dir", str(tmp_path))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "CUDA" in result.stderr


def test_epoch_batches_cover_every_pair_once_in_a_seeded_order():
    pairs = [([4] * (1 + i % 7), [5] * (1 + i % 5)) for i in range(100)]
    batches = epoch_batches(pairs, batch_size=8, seed=3, epoch=0)
    assert sum(src.shape[0] for src, _ in batches) == len(pairs)
    assert sum(int((src == 4).sum()) for src, _ in batches) == sum(len(s) for s, _ in pairs)
    again = epoch_batches(pairs, batch_size=8, seed=3, epoch=0)
    assert all((a == b).all() for (a, _), (b, _) in zip(batches, again))
    other = epoch_batches(pairs, batch_size=8, seed=3, epoch=1)
    assert any(a.shape != b.shape or (a != b).any() for (a, _), (b, _) in zip(batches, other))


def test_batch_stream_resumes_mid_epoch_where_it_left_off():
    pairs = [([4] * (1 + i % 7), [5] * (1 + i % 5)) for i in range(50)]
    from_start = batch_stream(pairs, batch_size=8, seed=0, start_step=0)
    expected = [next(from_start) for _ in range(20)]
    resumed = batch_stream(pairs, batch_size=8, seed=0, start_step=9)
    for src, tgt in expected[9:]:
        got_src, got_tgt = next(resumed)
        assert (got_src == src).all() and (got_tgt == tgt).all()
