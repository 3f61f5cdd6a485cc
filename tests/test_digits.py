"""`python -m train.digits` end to end, small (a few epochs, seconds): the CNN learns the
held-out digits, its checkpoint reloads, a run stopped by a signal resumes to the weights
of an uninterrupted one bit for bit, the PyTorch comparison runs the same model, and
missing requirements fail with one line."""

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from background_runs import BackgroundRun

import minigrad as mg

pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "train.digits", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env=None if env is None else {**os.environ, **env})


def held_out_accuracies(stdout: str) -> list[float]:
    return [float(a) for a in re.findall(r"held-out accuracy (\d+\.\d+)%", stdout)]


EPOCHS = 6  # enough that a signal sent after the first comes before the last


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[Path, str]:
    """The checkpoint and output of one uninterrupted run of EPOCHS epochs."""
    out_dir = tmp_path_factory.mktemp("digits")
    result = run_cli("--epochs", str(EPOCHS), "--out-dir", str(out_dir))
    assert result.returncode == 0, result.stderr
    return out_dir / "digits.safetensors", result.stdout


def test_the_cnn_learns_the_held_out_digits(uninterrupted):
    checkpoint, stdout = uninterrupted
    assert "1438 training and 359 held-out images" in stdout
    per_epoch = held_out_accuracies(stdout)[:EPOCHS]
    assert len(per_epoch) == EPOCHS and per_epoch[2] >= 90.0  # chance is 10%
    losses = [float(x) for x in re.findall(r"loss (\d+\.\d+)", stdout)]
    assert losses[-1] < 0.5 * losses[0]
    # the reloaded checkpoint scores what the trained model scored
    reloaded = re.search(r"reloaded: held-out accuracy (\d+\.\d+)%", stdout)
    assert reloaded and float(reloaded.group(1)) == per_epoch[-1]
    saved = mg.load(str(checkpoint))
    assert int(saved["epoch"]) == EPOCHS
    assert set(saved) == {"model", "optimizer", "scheduler", "epoch"}
    assert list(saved["model"]) == ["0.weight", "0.bias", "3.weight", "3.bias", "7.weight",
                                    "7.bias"]


def test_a_signal_ends_the_epoch_and_the_printed_command_resumes_it(uninterrupted,
                                                                     tmp_path):
    """SIGTERM once the first checkpoint is written: the run stops after the epoch in
    progress, saved, exits 143 and prints the command that resumes it; that command ends
    with the uninterrupted run's weights, bit for bit (data order, Adam state and
    schedule). Every run is its own process, as a user's would be: train.digits sets
    OpenBLAS's thread count before NumPy loads, and a different count sums the products
    in another order."""
    path = tmp_path / "digits.safetensors"
    run = BackgroundRun([sys.executable, "-m", "train.digits", "--epochs", str(EPOCHS),
                         "--out-dir", str(tmp_path)], tmp_path / "output")
    while not path.exists():  # the first epoch's checkpoint
        assert run.process.poll() is None, "the run ended before its first checkpoint"
        time.sleep(0.01)
    run.process.send_signal(signal.SIGTERM)
    cut = run.finish(timeout=60)
    assert cut.returncode == 143, cut.stderr
    epochs_done = int(mg.load(str(path))["epoch"])
    assert epochs_done < EPOCHS, "the run ended before the signal came"
    assert f"epoch {epochs_done + 1:3d}/{EPOCHS}" not in cut.stdout
    (line,) = cut.lines_of("digits")
    stopped = (f"digits: stopped by SIGTERM after epoch {epochs_done} of {EPOCHS}; saved to "
               f"{path}; resume with: ")
    assert line.startswith(stopped) and "Traceback" not in cut.stderr, cut.stderr
    command = shlex.split(line.removeprefix(stopped))
    assert command[:3] == ["python", "-m", "train.digits"], command
    resumed = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"epoch {epochs_done + 1:3d}/{EPOCHS}" in resumed.stdout
    assert f"epoch {epochs_done:3d}/{EPOCHS}" not in resumed.stdout
    checkpoint, _ = uninterrupted
    expected, got = mg.load(str(checkpoint))["model"], mg.load(str(path))["model"]
    for name in expected:
        np.testing.assert_array_equal(got[name].numpy(), expected[name].numpy())


def test_compare_torch_trains_the_same_model_in_pytorch(tmp_path):
    pytest.importorskip("torch")
    result = run_cli("--epochs", "1", "--out-dir", str(tmp_path), "--compare-torch")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| framework") and len(rows) == 3
    assert rows[1].startswith("| minigrad") and rows[2].startswith("| PyTorch 2.")
    assert all(accuracy > 50.0 for accuracy in held_out_accuracies("\n".join(rows)))


def test_trains_on_the_gpu_path_of_the_cupy_stand_in(tmp_path):
    """--device gpu end to end on the CuPy stand-in (MINIGRAD_FAKE_GPU=1): the batches
    move to the device, the checkpoint reloads there."""
    result = run_cli("--device", "gpu", "--epochs", "2", "--out-dir", str(tmp_path),
                     env={"MINIGRAD_FAKE_GPU": "1"})
    assert result.returncode == 0, result.stderr
    assert held_out_accuracies(result.stdout)[1] >= 80.0
    assert "reloaded: held-out accuracy" in result.stdout


def test_build_model_gives_both_libraries_the_same_state_dict_names():
    torch = pytest.importorskip("torch")
    from train.digits import build_model

    ours, theirs = build_model(mg), build_model(torch)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()]


def run_main(capsys, *args: str) -> tuple[int, str]:
    """main() in this process (no interpreter start-up): (exit status, stderr)."""
    from train.digits import main

    try:
        status = main(list(args))
    except SystemExit as exit_:  # argparse's usage errors
        status = exit_.code
    return status, capsys.readouterr().err


@pytest.mark.parametrize("args, status, message", [
    (["--resume", "/nonexistent/digits.safetensors"], 2,
     "digits: no checkpoint at /nonexistent/digits.safetensors"),
    (["--epochs", "0"], 2, "digits: error: argument --epochs: must be an integer >= 1, got 0"),
    (["--torch-threads", "0"], 2, "argument --torch-threads: must be an integer >= 1"),
    (["--test-fraction", "1.5"], 2,
     "argument --test-fraction: must be a finite number in (0.0, 1.0), got 1.5"),
])
def test_bad_arguments_fail_with_one_line(capsys, args, status, message):
    code, stderr = run_main(capsys, *args)
    assert code == status
    assert message in stderr and "Traceback" not in stderr


def test_gpu_without_cuda_fails_with_one_line(capsys):
    if mg.cuda.is_available():
        pytest.skip("CUDA is available here")
    code, stderr = run_main(capsys, "--device", "gpu")
    assert code == 2
    assert stderr.startswith("digits: --device cuda needs a CUDA GPU")
    assert len(stderr.strip().splitlines()) == 1


def test_a_corrupt_checkpoint_fails_with_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a checkpoint")
    code, stderr = run_main(capsys, "--resume", str(bad), "--out-dir", str(tmp_path))
    assert code == 1
    assert stderr.startswith(f"digits: cannot resume from {bad}")
    assert len(stderr.strip().splitlines()) == 1
