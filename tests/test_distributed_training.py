"""`mpiexec -n 2 python -m train.toy_translate --distributed`, small: the loss falls, rank 0
alone prints and writes, its checkpoint loads in one process, a resumed run repeats an
uninterrupted one, and ranks started with other flags are refused naming the rank.

Stopping: SIGINT to mpiexec, or SIGTERM to one rank, stops every rank after the same step
and rank 0 saves it; and the errors of one rank (the output folder removed, a NaN on one
rank's share of the validation loss, running out of memory) end the whole job within
seconds with one line, where they once left the other rank waiting forever."""
import json
import shlex
import shutil
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from background_runs import ROOT, BackgroundRun, Finished
from mpi_jobs import job_env, needs_mpi, run_ranks

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
TINY_STEPS = 20
FAULTS = str(ROOT / "tests" / "toy_translate_faults.py")


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


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    """The out-dir of an uninterrupted TINY run of TINY_STEPS steps on two ranks."""
    out_dir = tmp_path_factory.mktemp("whole")
    result = toy_translate(*TINY, "--steps", str(TINY_STEPS), "--out-dir", str(out_dir))
    assert result.returncode == 0, result.stderr
    return out_dir


def test_a_resumed_distributed_run_repeats_an_uninterrupted_one(whole, tmp_path):
    halves = tmp_path / "halves"
    first = toy_translate(*TINY, "--steps", str(TINY_STEPS // 2), "--out-dir", str(halves))
    assert first.returncode == 0, first.stderr
    resumed = toy_translate("--resume", str(halves / "toy_translate.safetensors"),
                            "--steps", str(TINY_STEPS), "--out-dir", str(halves))
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


# ------------------------------------------------------------------ signals and errors


def start_ranks(command: list[str], output_dir: Path) -> BackgroundRun:
    """`command --distributed` on two ranks, in the background."""
    return BackgroundRun([*mpiexec_command(2), *command, "--distributed"], output_dir,
                         env=job_env())


def with_fault(fault: str, out_dir: Path) -> Finished:
    """Two ranks of toy_translate with a fault of tests/toy_translate_faults.py planted,
    to the end; a job that hangs fails after the timeout."""
    run = start_ranks([sys.executable, FAULTS, fault, *TINY, "--steps", str(TINY_STEPS),
                       "--out-dir", str(out_dir)], out_dir.parent / "output")
    return run.finish(timeout=120)


def only_line(finished: Finished) -> str:
    """The one line toy_translate printed (counted in the text: mpiexec may join two
    ranks' lines into one)."""
    assert "Traceback" not in finished.stderr, finished.stderr
    assert finished.stderr.count("toy_translate: ") == 1, finished.stderr
    (line,) = finished.lines_of("toy_translate")
    return line


def test_sigint_to_mpiexec_stops_both_ranks_at_one_step_and_the_printed_command_resumes(
        whole, tmp_path):
    out_dir = tmp_path / "run"
    run = start_ranks([sys.executable, "-m", "train.toy_translate", *TINY, "--steps",
                       str(TINY_STEPS), "--out-dir", str(out_dir)], tmp_path / "output")
    run.wait_for_lines(out_dir / "toy_translate_log.jsonl", 3)
    run.process.send_signal(signal.SIGINT)  # as Ctrl-C does; mpiexec sends it to the ranks
    finished = run.finish(timeout=60)
    assert finished.returncode == 130, finished.stderr
    checkpoint = out_dir / "toy_translate.safetensors"
    state, _, _, _ = load_run(str(checkpoint), "cpu")
    assert 3 <= state.step < TINY_STEPS, "the run ended before the signal came"
    stopped = (f"toy_translate: stopped by SIGINT at step {state.step} of {TINY_STEPS}; "
               f"saved to {checkpoint}; resume with: ")
    line = only_line(finished)
    assert line.startswith(stopped), line
    assert sorted(losses(out_dir)) == list(range(1, state.step + 1))
    command = shlex.split(line.removeprefix(stopped))
    assert command[:6] == ["mpiexec", "-n", "2", "python", "-m", "train.toy_translate"]
    resumed = run_ranks([sys.executable, *command[4:]], ranks=2, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert losses(out_dir) == losses(whole)


def test_sigterm_to_one_rank_stops_both_at_the_same_step(tmp_path):
    finished = with_fault("sigterm-on-rank-1", tmp_path / "run")
    assert finished.returncode == 143, finished.stderr
    assert only_line(finished).startswith(f"toy_translate: stopped by SIGTERM at step 3 of "
                                          f"{TINY_STEPS}; saved to ")
    state, _, _, _ = load_run(str(tmp_path / "run" / "toy_translate.safetensors"), "cpu")
    assert state.step == 3 and sorted(losses(tmp_path / "run")) == [1, 2, 3]


def test_removing_the_output_folder_mid_run_ends_the_job(tmp_path):
    out_dir = tmp_path / "run"
    run = start_ranks([sys.executable, "-m", "train.toy_translate", *TINY, "--steps",
                       "100000", "--out-dir", str(out_dir)], tmp_path / "output")
    log = out_dir / "toy_translate_log.jsonl"
    run.wait_for_lines(log, 3)
    shutil.rmtree(out_dir)
    finished = run.finish(timeout=30)
    assert finished.returncode == 1 and finished.seconds < 20, finished.stderr
    assert only_line(finished) == f"toy_translate: {log}: No such file or directory"


@pytest.mark.parametrize("fault, loss", [
    ("nan-validation-on-rank-0", "the validation loss is nan at step 10"),
    ("nan-training-loss-on-rank-1", "the training loss is nan at step 3 on rank 1"),
])
def test_a_nan_on_one_rank_stops_every_rank(tmp_path, fault, loss):
    finished = with_fault(fault, tmp_path / "run")
    assert finished.returncode == 1, finished.stderr
    assert only_line(finished).startswith(f"toy_translate: {loss}: training stopped and "
                                          "nothing was saved")


@pytest.mark.parametrize("flag, status, problem", [
    ("--out-dir", 2, "argument --out-dir: cannot create"),
    ("--resume", 1, "truncated or not a safetensors file"),
])
def test_a_refusal_before_training_is_one_line_for_the_job(tmp_path, flag, status, problem):
    """The output folder is checked by rank 0 alone, the checkpoint by every rank: either
    way the ranks agree before training, and the job says it once."""
    not_a_folder = tmp_path / "a_file"
    not_a_folder.write_text("not a folder, not a checkpoint")
    path = not_a_folder / "run" if flag == "--out-dir" else not_a_folder
    result = toy_translate(*TINY, "--steps", "5", flag, str(path), timeout=120)
    assert result.returncode == status, result.stderr
    # counted in the text: mpiexec may join two ranks' lines into one
    assert result.stderr.count("toy_translate: ") == 1, result.stderr
    assert problem in result.stderr, result.stderr


def test_an_error_on_one_rank_ends_the_job_with_its_line(tmp_path):
    finished = with_fault("memory-error-on-rank-1", tmp_path / "run")
    assert finished.returncode == 1, finished.stderr
    assert only_line(finished) == "toy_translate: rank 1: out of memory: planted on rank 1"
