"""`mpiexec -n 2 python -m train.toy_translate --distributed`, small: the loss falls, rank 0
alone prints and writes, its checkpoint loads in one process, a resumed run repeats an
uninterrupted one, and ranks started with other flags are refused naming the rank."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from mpi_jobs import needs_mpi, run_ranks

from minigrad.distributed.launch import mpiexec_command
from train.checkpoint import load_run
from train.distributed import share_of_rows, without_padding_columns
from train.vocab import PAD_ID

pytestmark = needs_mpi

SMALL = ["--train-size", "4000", "--d-model", "32", "--heads", "2", "--layers", "1",
         "--ff", "64", "--eval-every", "50", "--beam-size", "2", "--top-beams", "2"]
TINY = ["--train-size", "300", "--d-model", "16", "--heads", "2", "--layers", "1",
        "--ff", "32", "--batch-size", "8", "--warmup", "10", "--eval-every", "10",
        "--beam-size", "2", "--top-beams", "1"]


def toy_translate(*args: str, ranks: int | None = 2, timeout: float = 300):
    command = [sys.executable, "-m", "train.toy_translate", *args]
    return run_ranks(command + (["--distributed"] if ranks else []), ranks, timeout)


def logged(out_dir: Path) -> list[dict]:
    return [json.loads(line) for line in
            (out_dir / "toy_translate_log.jsonl").read_text().splitlines()]


def losses(out_dir: Path) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in logged(out_dir) if "loss" in r}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> tuple[Path, object]:
    out_dir = tmp_path_factory.mktemp("distributed")
    result = toy_translate(*SMALL, "--steps", "100", "--out-dir", str(out_dir))
    assert result.returncode == 0, result.stdout + result.stderr
    return out_dir, result


def test_the_loss_falls_and_rank_0_alone_prints_and_writes(small_run):
    out_dir, result = small_run
    steps = [r["step"] for r in logged(out_dir) if "loss" in r]
    assert steps == list(range(1, 101))  # one line per step: no second rank appending
    loss = losses(out_dir)
    first, last = [loss[s] for s in range(1, 6)], [loss[s] for s in range(96, 101)]
    assert np.mean(last) < np.mean(first) - 0.5
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "toy_translate.safetensors", "toy_translate_log.jsonl", "toy_translate_loss.png"]
    assert result.stdout.count("training pairs") == 1
    assert result.stdout.count("checkpoint saved to") == 1
    assert result.stdout.count("test set (500 unseen sentences)") == 1
    assert "test_exact_match" in logged(out_dir)[-1]


def test_its_checkpoint_loads_in_one_process(small_run):
    out_dir, _ = small_run
    state, config, _, _ = load_run(str(out_dir / "toy_translate.safetensors"), "cpu")
    assert state.step == 100 and config.d_model == 32
    translated = toy_translate("--translate", "je suis étudiant", "--out-dir", str(out_dir),
                               "--top-beams", "1", ranks=None)
    assert translated.returncode == 0, translated.stderr
    assert translated.stdout.startswith("je suis étudiant\n  1. ")


def test_a_resumed_distributed_run_repeats_an_uninterrupted_one(tmp_path):
    whole, halves = tmp_path / "whole", tmp_path / "halves"
    assert toy_translate(*TINY, "--steps", "20", "--out-dir", str(whole)).returncode == 0
    first = toy_translate(*TINY, "--steps", "10", "--out-dir", str(halves))
    assert first.returncode == 0, first.stderr
    resumed = toy_translate("--resume", str(halves / "toy_translate.safetensors"),
                            "--steps", "20", "--out-dir", str(halves))
    assert resumed.returncode == 0, resumed.stderr
    assert losses(halves) == losses(whole)  # bitwise: JSON floats round-trip


def test_ranks_with_other_flags_are_refused_naming_the_rank(tmp_path):
    command = [sys.executable, "-m", "train.toy_translate", "--distributed", *TINY,
               "--out-dir", str(tmp_path)]
    launcher = mpiexec_command(1)
    result = run_ranks([*command, "--steps", "5", ":", *launcher[1:], *command,
                        "--steps", "6"], ranks=1, timeout=120)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("toy_translate")]
    assert lines == ["toy_translate: rank 1 was started with other flags than rank 0: "
                     "--steps 6 (rank 0: 5)"]
    assert not any(tmp_path.iterdir())


def test_each_rank_gets_its_rows_of_the_global_batch():
    assert [share_of_rows(5, rank, 2).tolist() for rank in range(2)] == [[0, 2, 4], [1, 3, 0]]
    assert [share_of_rows(1, rank, 3).tolist() for rank in range(3)] == [[0], [0], [0]]
    batch = np.array([[5, 6, PAD_ID, PAD_ID], [7, PAD_ID, PAD_ID, PAD_ID]])
    assert without_padding_columns(batch).tolist() == [[5, 6], [7, PAD_ID]]
