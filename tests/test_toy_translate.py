"""`python -m train.toy_translate` end to end, as a user runs it (tiny configuration):
training lowers the loss, a resumed run repeats an uninterrupted one bit for bit,
translation works and refuses unknown words clearly, and --device gpu without CUDA
fails with one line. Plus the batching that makes exact resumption possible."""

import json
import os
import re
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


# ----------------------------------------------------------------------------- bad input


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def assert_one_line_error(result: subprocess.CompletedProcess, status: int, *fragments: str):
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


BAD_FLAGS = [
    (["--steps", "0"], "argument --steps: must be an integer >= 1, got 0"),
    (["--steps", "2.5"], "argument --steps: must be an integer >= 1, got '2.5'"),
    (["--batch-size", "0"], "argument --batch-size"),
    (["--heads", "0"], "argument --heads"),
    (["--d-model", "30", "--heads", "4"], "--d-model 30 is not divisible by --heads 4"),
    (["--heads", "3"], "--d-model 64 is not divisible by --heads 3"),
    (["--layers", "-1"], "argument --layers"),
    (["--ff", "0"], "argument --ff"),
    (["--eval-every", "0"], "argument --eval-every"),
    (["--warmup", "0"], "argument --warmup"),
    (["--dropout", "1.5"], "argument --dropout: must be a finite number in [0.0, 1.0)"),
    (["--dropout", "1"], "argument --dropout"),
    (["--dropout", "-0.1"], "argument --dropout"),
    (["--lr-factor", "nan"], "argument --lr-factor: must be a finite number > 0.0, got nan"),
    (["--lr-factor", "inf"], "argument --lr-factor"),
    (["--lr-factor", "0"], "argument --lr-factor"),
    (["--seed", "-1"], "argument --seed"),
    (["--seed", str(2**64)], "argument --seed"),
    (["--train-size", "3"], "argument --train-size: must be an integer in [7, 1000000]"),
    (["--train-size", "10000000"], "argument --train-size"),
    (["--beam-size", "0"], "argument --beam-size"),
    (["--top-beams", "0"], "argument --top-beams"),
    (["--beam-size", "2", "--top-beams", "3"], "--top-beams: 3 is more than --beam-size 2"),
    (["--device", "tpu"], "argument --device: invalid choice"),
    (["--steps"], "argument --steps: expected one argument"),
    (["--stepz", "5"], "unrecognized arguments"),
    (["--translate", "merci", "--steps", "5"], "argument --steps: not allowed with --translate"),
    (["--translate", ""], "argument --translate: no French words to translate"),
    (["--translate", " ?! "], "no French words to translate"),
    (["--plot-attention", "heads.xyz"], "argument --plot-attention: cannot save a xyz image"),
]


# runs main() on each command line in one process (one start-up instead of dozens) and
# reports what a shell would see: the exit status and stderr, a traceback if one escaped
_MANY_COMMANDS = """
import contextlib, io, json, sys, traceback
from train.toy_translate import main

results = []
for argv in json.load(sys.stdin):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main(argv)
        except SystemExit as exit:
            status = exit.code
        except BaseException:
            traceback.print_exc()
            status = 99
    results.append([status, stderr.getvalue()])
json.dump(results, sys.stdout)
"""


def run_cli_many(command_lines: list[list[str]]) -> list[subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _MANY_COMMANDS], input=json.dumps(
        command_lines), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        check=True)
    return [subprocess.CompletedProcess(argv, status, "", stderr) for argv, (status, stderr)
            in zip(command_lines, json.loads(done.stdout), strict=True)]


def test_bad_flags_are_one_line_exit_2_and_touch_nothing(trained):
    """Every bad value, pointed at a finished run's folder: its log, checkpoint and plots
    stay byte for byte what they were."""
    before = snapshot(trained)
    results = run_cli_many([[*flags, "--out-dir", str(trained)] for flags, _ in BAD_FLAGS])
    for (_, message), result in zip(BAD_FLAGS, results, strict=True):
        assert_one_line_error(result, 2, "toy_translate: error:", message)
    assert run_cli("--steps", "0", "--out-dir", str(trained)).returncode == 2  # for real
    assert snapshot(trained) == before


def test_resume_refuses_flags_that_would_change_the_run(trained):
    before = snapshot(trained)
    checkpoint = str(trained / "toy_translate.safetensors")
    result = run_cli("--resume", checkpoint, "--d-model", "32", "--out-dir", str(trained))
    assert_one_line_error(result, 2, "argument --d-model", "has d_model 16", "only --steps")
    result = run_cli("--resume", checkpoint, "--steps", str(STEPS - 1), "--out-dir",
                     str(trained))
    assert_one_line_error(result, 2, f"--steps: {STEPS - 1} is less than the checkpoint's "
                                     f"step {STEPS}")
    assert snapshot(trained) == before


def test_unwritable_outputs_are_refused_before_training(trained, tmp_path):
    before = snapshot(trained)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    cases = [(["--out-dir", str(blocker / "run")], "--out-dir", "is a file"),
             (["--out-dir", str(blocker)], "--out-dir", "is a file"),
             (["--out-dir", str(tmp_path / "out"), "--save", str(blocker / "c.st")], "--save",
              "is a file"),
             (["--out-dir", str(tmp_path / "out"), "--save", str(trained)], "--save",
              "is a folder")]
    if sys.platform.startswith("linux"):  # /sys takes no new file, not even from root
        cases.append((["--out-dir", "/sys/minigrad_run"], "--out-dir", "cannot write in /sys"))
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append((["--out-dir", str(locked / "run")], "--out-dir", "Permission denied"))
    for flags, option, problem in cases:
        result = run_cli(*TINY, "--steps", "5", *flags)
        assert_one_line_error(result, 2, f"argument {option}", problem)
    result = run_cli("--translate", "merci", "--out-dir", str(trained), "--plot-attention",
                     str(blocker / "heads.png"))
    assert_one_line_error(result, 2, "argument --plot-attention", "is a file")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "locked") == ["a_file"]
    assert snapshot(trained) == before


def test_resuming_into_a_longer_log_logs_no_step_twice(trained, tmp_path):
    half = tmp_path / "half.safetensors"
    first = run_cli(*TINY, "--steps", str(STEPS // 2), "--out-dir", str(tmp_path),
                    "--save", str(half))
    assert first.returncode == 0, first.stderr
    for _ in range(2):  # the second time, the log already runs to STEPS
        resumed = run_cli("--resume", str(half), "--steps", str(STEPS), "--out-dir",
                          str(tmp_path))
        assert resumed.returncode == 0, resumed.stderr
    steps = [json.loads(line)["step"] for line in
             (tmp_path / "toy_translate_log.jsonl").read_text().splitlines()
             if "loss" in json.loads(line)]
    assert steps == list(range(1, STEPS + 1))
    assert f"dropped {STEPS - STEPS // 2 + 1} lines logged after step {STEPS // 2}" in (
        resumed.stdout)
    assert logged_losses(tmp_path) == logged_losses(trained)


def _strict_json(line: str) -> dict:
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(line, parse_constant=refuse)


def test_a_diverging_run_stops_naming_the_step_and_keeps_the_checkpoint(trained, tmp_path):
    checkpoint = tmp_path / "good.safetensors"
    checkpoint.write_bytes((trained / "toy_translate.safetensors").read_bytes())
    result = run_cli(*TINY, "--steps", "20", "--lr-factor", "1e30", "--out-dir",
                     str(tmp_path), "--save", str(checkpoint))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"toy_translate: the training loss is nan at step \d+: training "
                        r"stopped and nothing was saved .*", last), last
    assert checkpoint.read_bytes() == (trained / "toy_translate.safetensors").read_bytes()
    records = [_strict_json(line) for line in
               (tmp_path / "toy_translate_log.jsonl").read_text().splitlines()]
    failed_at = int(re.search(r"step (\d+)", last)[1])
    assert [record["step"] for record in records] == list(range(1, failed_at))


def test_the_log_is_strict_json(trained):
    for line in (trained / "toy_translate_log.jsonl").read_text().splitlines():
        _strict_json(line)


def test_translate_input_the_model_cannot_take_is_one_line(trained):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    raw = subprocess.run([sys.executable, "-m", "train.toy_translate", "--translate",
                          b"je suis \xe9tudiant", "--out-dir", str(trained)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    assert_one_line_error(raw, 2, "argument --translate: the text is not valid UTF-8",
                          "byte 0xe9")
    too_long = run_cli("--translate", " ".join(["chat"] * 4991), "--out-dir", str(trained))
    assert_one_line_error(too_long, 1, "cannot translate 4991 words", "at most 4990 words")
