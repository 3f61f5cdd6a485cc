"""`python -m train.char_lm` on tiny settings (seconds): each kind of model learns, the
perplexity is the one a hand computation gives, a run stopped by a signal and resumed
repeats the uninterrupted run's losses bit for bit, the PyTorch twin takes the same steps,
sampling is reproducible, and bad flags and checkpoints fail with one line."""

import argparse
import json
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
from tolerances import SAFETY, log_softmax_tolerance, unit_roundoff

import minigrad as mg
from train import char_lm_loop
from train.char_lm import main, sample_lines
from train.char_lm_config import RunConfig
from train.char_lm_data import epoch_batches, load_corpus, windows
from train.char_lm_loop import new_learner, perplexity, torch_twin, train_step
from train.char_lm_model import MODEL_KINDS, sample_ids

ROOT = Path(__file__).resolve().parents[1]
CORPUS = load_corpus()
VOCAB = len(CORPUS.alphabet)


def tiny_config(kind: str, **changes) -> RunConfig:
    values = dict(model=kind, embedding=16, hidden=16, layers=2, heads=2, feedforward=32,
                  dropout=0.0, tie_weights=False, seq_len=16, batch_size=16, lr=1e-2,
                  clip=1.0, seed=0, train_size=None)
    return RunConfig(**{**values, **changes})


STEPS_PER_EPOCH = 9  # of tiny_flags: 20,000 characters make 624 windows of 32 + 1


def tiny_flags(kind: str) -> list[str]:
    """A run of seconds: epochs of 9 steps of 64 windows of 32 characters."""
    size = ["--heads", "2", "--feedforward", "32"] if kind == "transformer" else [
        "--hidden", "16"]
    return ["--model", kind, "--embedding", "16", "--layers", "1", *size, "--seq-len", "32",
            "--batch-size", "64", "--train-size", "20000", "--sample", "2"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The command in its own process, as a user runs it (it sets OpenBLAS's threads
    before NumPy loads: another count sums the products in another order)."""
    return subprocess.run([sys.executable, "-m", "train.char_lm", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def validation_perplexities(stdout: str) -> list[float]:
    """Per epoch, from the lines of minigrad and of PyTorch in turn."""
    return [float(x) for x in re.findall(r"validation perplexity +(\d+\.\d+) \(", stdout)]


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_the_loss_falls(kind):
    """30 Adam steps take each model from about log(V) (uniform guesses) to well below
    it: the characters' frequencies alone are worth about log(V) - log(26.75) = 1.35."""
    config = tiny_config(kind)
    learner = new_learner(mg, config, VOCAB, "cpu")
    batches = epoch_batches(windows(CORPUS.train, config.seq_len), 32, seed=0, epoch=0)
    losses = [train_step(learner, batch, config.clip) for batch in batches[:30]]
    assert abs(losses[0] - np.log(VOCAB)) < 1.0, losses[0]
    assert np.mean(losses[-5:]) < losses[0] - 1.0, losses


def test_perplexity_is_the_exp_of_the_mean_cross_entropy_per_character():
    """Five windows in batches of 2, 2 and 1: each of the 5 x 8 targets weighs the same
    (a mean of the batches' means would weigh the last window 1/3), in eval mode (the
    dropout of train mode would change the logits)."""
    config = tiny_config("lstm", seq_len=8, dropout=0.5)
    learner = new_learner(mg, config, VOCAB, "cpu")
    five = windows(CORPUS.validation, config.seq_len)[:5]
    model = learner.model.eval()
    with mg.no_grad():
        logits, _ = model(mg.tensor(five[:, :-1]))
    logits = logits.numpy().astype(np.float64)
    log_p = logits - logits.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    targets = five[:, 1:, None]
    expected = np.exp(-np.take_along_axis(log_p, targets, -1).mean())
    # float32 log-softmax at each target, then float32 sums of a batch's 16 targets (a
    # sum of n terms errs by up to n u sum|terms|)
    per_target = np.take_along_axis(log_softmax_tolerance(logits, np.float32), targets, -1)
    summing = SAFETY * 16 * unit_roundoff(np.float32) * np.log(expected)
    mean_error = per_target.mean() + summing
    got = perplexity(learner, five, batch_size=2)
    assert abs(np.log(got) - np.log(expected)) <= mean_error, (got, expected)
    model.train()  # perplexity() must set eval mode itself
    assert perplexity(learner, five, batch_size=2) == got


@pytest.mark.parametrize("kind, changes", [*((kind, {}) for kind in MODEL_KINDS),
                                           ("gru", {"tie_weights": True})])
def test_pytorch_twin_takes_the_same_first_steps(kind, changes):
    """The twin starts from minigrad's weights and trains on the same batches, so the
    losses of the first steps differ only by float32 rounding: the forward's, a few units
    in the last place of the loss (its mean over the batch's targets is computed in
    another order), and the updates', which move the weights by about lr * u apart
    (Adam's first steps are nearly lr * sign(gradient), the same for both) and the loss
    by far less. 8 ulps of the loss, then; other weights or batches miss by 1e-2."""
    torch = pytest.importorskip("torch")
    config = tiny_config(kind, **changes)
    learner = new_learner(mg, config, VOCAB, "cpu")
    twin = torch_twin(learner, config, VOCAB, threads=1)
    assert isinstance(twin.model, torch.nn.Module)
    batches = epoch_batches(windows(CORPUS.train, config.seq_len), 16, seed=0, epoch=0)[:4]
    ours = np.array([train_step(learner, batch, config.clip) for batch in batches])
    theirs = np.array([train_step(twin, batch, config.clip) for batch in batches])
    ulp = 2 * unit_roundoff(np.float32) * ours
    assert np.all(np.abs(ours - theirs) <= 8 * ulp), (ours, theirs)


def test_sampling_is_reproducible_and_follows_the_temperature():
    config = tiny_config("gru")
    learner = new_learner(mg, config, VOCAB, "cpu")
    prompt = [CORPUS.alphabet.index(c) for c in "The "]

    def draw(seed: int, temperature: float = 1.0, count: int = 40) -> list[int]:
        ids = sample_ids(learner.model, prompt, temperature, seed, "cpu")
        return [next(ids) for _ in range(count)]

    first = draw(seed=3)
    mg.manual_seed(99)  # the global RNG has no say
    assert draw(seed=3) == first
    assert draw(seed=4) != first
    # a temperature near 0 picks the likeliest character each time
    greedy, state = [], None
    with mg.no_grad():
        logits, state = learner.model(mg.tensor([prompt]), state)
        for _ in range(10):
            greedy.append(int(logits.numpy()[0, -1].argmax()))
            logits, state = learner.model(mg.tensor([[greedy[-1]]]), state)
    assert draw(seed=3, temperature=1e-4, count=10) == greedy


def test_sample_lines_gives_the_lines_asked_for():
    learner = new_learner(mg, tiny_config("transformer"), VOCAB, "cpu")
    prompt = np.array([CORPUS.alphabet.index(c) for c in "def "])
    args = argparse.Namespace(sample=3, temperature=1.0, sample_seed=0, device="cpu")
    lines = sample_lines(learner.model, CORPUS.alphabet, prompt, args)
    assert len(lines) == 3 and lines[0].startswith("def ")
    assert all(line.strip() and "\n" not in line for line in lines)
    assert sample_lines(learner.model, CORPUS.alphabet, prompt, args) == lines


EPOCHS = 4


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[Path, str]:
    """The output folder and stdout of one uninterrupted Transformer run (dropout on, so
    the resumed run must also continue the RNG)."""
    out_dir = tmp_path_factory.mktemp("char_lm")
    result = run_cli(*tiny_flags("transformer"), "--dropout", "0.1", "--epochs", str(EPOCHS),
                     "--out-dir", str(out_dir))
    assert result.returncode == 0, result.stderr
    return out_dir, result.stdout


def test_a_run_logs_checkpoints_plots_and_samples(uninterrupted):
    out_dir, stdout = uninterrupted
    per_epoch = validation_perplexities(stdout)
    assert len(per_epoch) == EPOCHS and per_epoch[-1] < per_epoch[0]
    records = [json.loads(line) for line in
               (out_dir / "char_lm_transformer_log.jsonl").read_text().splitlines()]
    assert [r["validation_perplexity"] for r in records[:-1]] == pytest.approx(
        per_epoch, rel=1e-3)
    last = EPOCHS * STEPS_PER_EPOCH
    assert [r["step"] for r in records] == [*range(STEPS_PER_EPOCH, last + 1,
                                                  STEPS_PER_EPOCH), last]
    assert "test_perplexity" in records[-1]
    saved = mg.load(str(out_dir / "char_lm_transformer.safetensors"))
    assert saved["step"] == last and saved["losses"].shape == (last,)
    assert (out_dir / "char_lm_transformer.png").read_bytes()[:4] == b"\x89PNG"
    sampled = stdout.split("2 sampled lines")[1].splitlines()[1:]
    assert len(sampled) == 2 and sampled[0].startswith("  The ")


def test_a_signal_stops_the_run_and_the_printed_command_resumes_it_exactly(uninterrupted,
                                                                            tmp_path):
    """SIGTERM once the first checkpoint is written: the run stops at the next step
    boundary, saved, exits 143 and prints the command that resumes it; in its own process,
    as a user runs it, that command ends with the uninterrupted run's losses and weights,
    bit for bit (batch order, Adam's state and the dropout RNG)."""
    path = tmp_path / "char_lm_transformer.safetensors"
    run = BackgroundRun([sys.executable, "-m", "train.char_lm", *tiny_flags("transformer"),
                         "--dropout", "0.1", "--epochs", str(EPOCHS), "--out-dir",
                         str(tmp_path)], tmp_path / "output")
    while not path.exists():
        assert run.process.poll() is None, "the run ended before its first checkpoint"
        time.sleep(0.01)
    run.process.send_signal(signal.SIGTERM)
    cut = run.finish(timeout=120)
    assert cut.returncode == 143, cut.stderr
    step = mg.load(str(path))["step"]
    assert step < EPOCHS * STEPS_PER_EPOCH, "the run ended before the signal came"
    (line,) = cut.lines_of("char_lm")
    assert line.startswith(f"char_lm: stopped by SIGTERM at step {step} "), line
    command = shlex.split(line.partition("resume with: ")[2])
    assert command[:3] == ["python", "-m", "train.char_lm"], command
    resumed = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    out_dir, stdout = uninterrupted
    expected = mg.load(str(out_dir / "char_lm_transformer.safetensors"))
    got = mg.load(str(path))
    np.testing.assert_array_equal(got["losses"], expected["losses"])
    for name, tensor in expected["model"].items():
        np.testing.assert_array_equal(got["model"][name].numpy(), tensor.numpy())
    assert validation_perplexities(resumed.stdout)[-1] == validation_perplexities(stdout)[-1]


def test_a_run_stopped_in_the_middle_of_an_epoch_resumes_to_the_same_losses(
        capsys, monkeypatch, tmp_path):
    """SIGTERM during step 13 (the 4th of epoch 2) of an LSTM with dropout between its
    layers: the checkpoint holds step 13, and resuming runs the rest of epoch 2's batches
    to the uninterrupted run's losses and weights, bit for bit. In this process, so
    that the signal comes at a known step (every run here has the same threads)."""
    flags = [*tiny_flags("lstm"), "--layers", "2", "--dropout", "0.1", "--epochs", "2",
             "--sample", "0"]
    assert main([*flags, "--out-dir", str(tmp_path / "whole")]) == 0
    losses = []

    def step_then_signal(*args) -> float:
        losses.append(train_step(*args))
        if len(losses) == STEPS_PER_EPOCH + 4:
            os.kill(os.getpid(), signal.SIGTERM)
        return losses[-1]

    with monkeypatch.context() as patched:
        patched.setattr(char_lm_loop, "train_step", step_then_signal)
        assert main([*flags, "--out-dir", str(tmp_path / "cut")]) == 143
    path = tmp_path / "cut" / "char_lm_lstm.safetensors"
    assert mg.load(str(path))["step"] == STEPS_PER_EPOCH + 4
    capsys.readouterr()
    code, stderr = run_main(capsys, "--resume", str(path), "--epochs", "1")
    assert (code, stderr.strip()) == (2, "char_lm: error: argument --epochs: 1 is less than "
                                         "the 2 epochs the checkpoint has begun (see --help)")
    assert main(["--resume", str(path), "--out-dir", str(tmp_path / "cut"), "--epochs", "2",
                 "--sample", "0"]) == 0
    capsys.readouterr()
    expected = mg.load(str(tmp_path / "whole" / "char_lm_lstm.safetensors"))
    got = mg.load(str(path))
    np.testing.assert_array_equal(got["losses"], expected["losses"])
    for name, tensor in expected["model"].items():
        np.testing.assert_array_equal(got["model"][name].numpy(), tensor.numpy())


def test_trains_and_samples_on_the_gpu_path_of_the_cupy_stand_in(tmp_path):
    """--device gpu end to end on the CuPy stand-in (MINIGRAD_FAKE_GPU=1)."""
    result = subprocess.run([sys.executable, "-m", "train.char_lm", *tiny_flags("gru"),
                             "--device", "gpu", "--epochs", "1", "--out-dir", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "MINIGRAD_FAKE_GPU": "1"})
    assert result.returncode == 0, result.stderr
    assert len(validation_perplexities(result.stdout)) == 1
    assert "2 sampled lines" in result.stdout


def test_compare_torch_prints_both_perplexities_and_times_per_epoch(capsys, tmp_path):
    pytest.importorskip("torch")
    assert main([*tiny_flags("lstm"), "--epochs", "1", "--out-dir", str(tmp_path),
                 "--compare-torch", "--sample", "0"]) == 0
    stdout = capsys.readouterr().out
    ours, theirs = validation_perplexities(stdout)
    assert "minigrad" in stdout and "PyTorch 2." in stdout
    assert abs(ours - theirs) < 1e-3 * ours  # 9 steps from the same weights
    (record, _) = [json.loads(line) for line in
                   (tmp_path / "char_lm_lstm_log.jsonl").read_text().splitlines()]
    assert {"seconds", "torch_seconds", "torch_validation_perplexity"} <= set(record)


def run_main(capsys, *args: str) -> tuple[int, str]:
    """main() in this process: (exit status, stderr)."""
    try:
        status = main(list(args))
    except SystemExit as exit_:  # usage errors
        status = exit_.code
    return status, capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--model", "rnn"], "argument --model: invalid choice: 'rnn'"),
    (["--epochs", "0"], "argument --epochs: must be an integer >= 1, got 0"),
    (["--temperature", "0"], "argument --temperature: must be a finite number > 0.0"),
    (["--lr", "nan"], "argument --lr: must be a finite number > 0.0, got nan"),
    (["--heads", "2"], "argument --heads: the lstm model has no heads"),
    (["--model", "transformer", "--hidden", "8"], "the transformer model has no hidden"),
    (["--model", "transformer", "--heads", "3"], "embedding 128 is not divisible by heads 3"),
    (["--tie-weights"], "argument --tie-weights: the output layer is the embedding, so "
                        "hidden (256) must equal embedding (64)"),
    (["--batch-size", "100000"], "windows of seq_len 64, fewer than batch_size 100000"),
    (["--prompt", "€"], "argument --prompt: the character '€' is not in the corpus's"),
    (["--resume", "x.safetensors", "--compare-torch"], "--compare-torch: not allowed with"),
    (["--resume", "/nonexistent/c.safetensors"], "no checkpoint at /nonexistent/c."),
])
def test_bad_flags_fail_with_one_line(capsys, tmp_path, args, message):
    code, stderr = run_main(capsys, *args, "--out-dir", str(tmp_path))
    assert code == 2
    assert message in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not os.listdir(tmp_path)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    out_dir = tmp_path_factory.mktemp("char_lm_checkpoint")
    assert main([*tiny_flags("gru"), "--epochs", "1", "--out-dir", str(out_dir),
                 "--sample", "0"]) == 0
    return out_dir / "char_lm_gru.safetensors"


@pytest.mark.parametrize("args, message", [
    (["--lr", "0.1"], "argument --lr: the checkpoint's run has lr 0.003"),
    (["--model", "lstm"], "argument --model: the checkpoint's run has model gru"),
    (["--seed", "1"], "argument --seed: the checkpoint's run has seed 0"),
])
def test_flags_that_change_a_resumed_run_fail_with_one_line(capsys, checkpoint, args,
                                                            message):
    code, stderr = run_main(capsys, "--resume", str(checkpoint), *args)
    assert code == 2
    assert message in stderr and len(stderr.strip().splitlines()) == 1, stderr


def _rewritten(checkpoint: Path, tmp_path: Path, change) -> Path:
    saved = mg.load(str(checkpoint))
    change(saved)
    path = tmp_path / "changed.safetensors"
    mg.save(saved, str(path))
    return path


@pytest.mark.parametrize("change, message", [
    (lambda saved: saved.update(alphabet=saved["alphabet"][:-1]),
     "its alphabet is not this corpus's"),
    (lambda saved: saved["config"].update(hidden=24), "model: "),
    (lambda saved: saved["config"].update(dropout=2.0), "config: dropout: must be"),
    (lambda saved: saved.update(step=8), "losses must be 8 finite float64 values"),
    (lambda saved: saved.pop("rng"), "not a char_lm checkpoint"),
])
def test_bad_checkpoints_fail_with_one_line(capsys, checkpoint, tmp_path, change, message):
    path = _rewritten(checkpoint, tmp_path, change)
    code, stderr = run_main(capsys, "--resume", str(path), "--out-dir", str(tmp_path))
    assert code == 1
    assert stderr.startswith(f"char_lm: cannot resume from {path}: "), stderr
    assert message in stderr and len(stderr.strip().splitlines()) == 1, stderr


def test_a_corrupt_checkpoint_fails_with_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a checkpoint")
    code, stderr = run_main(capsys, "--resume", str(bad), "--out-dir", str(tmp_path))
    assert code == 1
    assert stderr.startswith(f"char_lm: cannot resume from {bad}")
    assert len(stderr.strip().splitlines()) == 1
