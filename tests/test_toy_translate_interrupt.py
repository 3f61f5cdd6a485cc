"""Ctrl-C (SIGINT) and SIGTERM during `python -m train.toy_translate` (tiny configuration):
training stops after the step in progress, the run is saved there with everything
--resume needs, one line gives the command that resumes it, and the exit status is 130 or
143; the resumed run logs the uninterrupted run's losses bit for bit. A signal during the
validation loss waits for it; one during the final report leaves the saved run; a second
SIGINT during the save stops at once and leaves the previous checkpoint whole."""
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from background_runs import ROOT, BackgroundRun, Finished
from test_toy_translate import TINY, run_cli

from train.arguments import parse_args, resume_command
from train.checkpoint import load_run

STEPS = 40
EVAL_EVERY = 10  # TINY's --eval-every
FAULTS = str(ROOT / "tests" / "toy_translate_faults.py")
ENV = {"OPENBLAS_NUM_THREADS": "1"}  # as run_cli's runs, whose losses these must repeat


def records(out_dir: Path) -> list[dict]:
    return [json.loads(line) for line in
            (out_dir / "toy_translate_log.jsonl").read_text().splitlines()]


def step_records(out_dir: Path) -> list[dict]:
    """The per-step records (loss, lr and, at some steps, val_loss), without the test
    scores that end a finished run's log."""
    return [record for record in records(out_dir) if "loss" in record]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    out_dir = tmp_path_factory.mktemp("uninterrupted")
    result = run_cli(*TINY, "--steps", str(STEPS), "--out-dir", str(out_dir))
    assert result.returncode == 0, result.stderr
    return out_dir


def run_with_fault(fault: str, out_dir: Path) -> Finished:
    """The command, with a fault of tests/toy_translate_faults.py planted, to the end."""
    run = BackgroundRun([sys.executable, FAULTS, fault, *TINY, "--steps", str(STEPS),
                         "--out-dir", str(out_dir)], out_dir.parent / f"{fault}-output", ENV)
    return run.finish(timeout=120)


def only_line(finished: Finished) -> str:
    assert "Traceback" not in finished.stderr, finished.stderr
    lines = finished.lines_of("toy_translate")
    assert len(lines) == 1, finished.stderr
    return lines[0]


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_saves_the_step_and_the_printed_command_resumes_it(
        uninterrupted, tmp_path, signal_number):
    out_dir = tmp_path / "run"
    run = BackgroundRun([sys.executable, "-m", "train.toy_translate", *TINY, "--steps",
                         str(STEPS), "--out-dir", str(out_dir)], tmp_path / "output", ENV)
    run.wait_for_lines(out_dir / "toy_translate_log.jsonl", 3)
    run.process.send_signal(signal_number)
    finished = run.finish(timeout=60)
    assert finished.returncode == 128 + signal_number, finished.stderr
    checkpoint = out_dir / "toy_translate.safetensors"
    state, _, _, _ = load_run(str(checkpoint), "cpu")
    assert 3 <= state.step < STEPS, "the run ended before the signal came"
    line = only_line(finished)
    stopped = (f"toy_translate: stopped by {signal_number.name} at step {state.step} of "
               f"{STEPS}; saved to {checkpoint}; resume with: ")
    assert line.startswith(stopped), line
    expected = step_records(uninterrupted)
    assert step_records(out_dir) == expected[:state.step]
    assert state.losses == [record["loss"] for record in expected[:state.step]]
    if signal_number == signal.SIGTERM:
        return  # resuming is the same for both signals
    command = shlex.split(line.removeprefix(stopped))
    assert command[:3] == ["python", "-m", "train.toy_translate"], command
    resumed = subprocess.run([sys.executable, *command[1:]], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT), **ENV},
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert step_records(out_dir) == expected  # bitwise: JSON floats round-trip


def test_a_signal_during_validation_saves_that_step_with_its_validation_loss(
        uninterrupted, tmp_path):
    out_dir = tmp_path / "run"
    finished = run_with_fault("sigint-in-validation", out_dir)
    assert finished.returncode == 130, finished.stderr
    assert f"stopped by SIGINT at step {EVAL_EVERY} of {STEPS}" in only_line(finished)
    state, _, _, _ = load_run(str(out_dir / "toy_translate.safetensors"), "cpu")
    expected = step_records(uninterrupted)[:EVAL_EVERY]
    assert state.step == EVAL_EVERY
    assert state.val_losses == {EVAL_EVERY: expected[-1]["val_loss"]}
    assert step_records(out_dir) == expected


def test_a_signal_during_the_report_leaves_the_saved_run(uninterrupted, tmp_path):
    out_dir = tmp_path / "run"
    finished = run_with_fault("sigint-in-test-evaluation", out_dir)
    assert finished.returncode == 130, finished.stderr
    checkpoint = out_dir / "toy_translate.safetensors"
    assert only_line(finished) == (f"toy_translate: stopped by SIGINT while reporting; the "
                                   f"trained run is saved in {checkpoint}")
    state, _, _, _ = load_run(str(checkpoint), "cpu")
    assert state.step == STEPS and step_records(out_dir) == step_records(uninterrupted)


def test_a_second_sigint_during_the_save_leaves_the_previous_checkpoint(
        uninterrupted, tmp_path):
    out_dir = tmp_path / "run"
    out_dir.mkdir()
    checkpoint = out_dir / "toy_translate.safetensors"
    previous = (uninterrupted / "toy_translate.safetensors").read_bytes()
    checkpoint.write_bytes(previous)
    finished = run_with_fault("sigint-then-sigint-in-save", out_dir)
    assert finished.returncode == 130, finished.stderr
    assert only_line(finished) == (f"toy_translate: stopped at once by SIGINT; {checkpoint} "
                                   "is as it was")
    assert checkpoint.read_bytes() == previous
    assert load_run(str(checkpoint), "cpu")[0].step == STEPS
    assert sorted(path.name for path in out_dir.iterdir()) == [
        "toy_translate.safetensors", "toy_translate_log.jsonl"]  # no temporary left


def test_the_resume_command_repeats_the_flags_that_are_not_the_checkpoints():
    args = parse_args(["--steps", "50", "--d-model", "32", "--out-dir", "my runs", "--save",
                       "my runs/a.st", "--top-beams", "1", "--distributed"])
    assert resume_command(args, 50, None) == (
        "python -m train.toy_translate --resume 'my runs/a.st' --steps 50 --out-dir "
        "'my runs' --top-beams 1 --save 'my runs/a.st'")
    assert resume_command(args, 50, 4).startswith(
        "mpiexec -n 4 python -m train.toy_translate --distributed --resume 'my runs/a.st'")
    assert resume_command(parse_args([]), 1500, None) == (
        "python -m train.toy_translate --resume runs/toy_translate.safetensors --steps 1500")
