"""Train a character-level language model on the help topics of Python's documentation.

    python -m train.char_lm                          # an LSTM, on the CPU
    python -m train.char_lm --model transformer      # or gru: the same run, another network
    python -m train.char_lm --compare-torch          # and the same model in PyTorch beside it
    python -m train.char_lm --resume runs/char_lm_lstm.safetensors --epochs 6

The text is `pydoc_data.topics`, which every Python install has (char_lm_data.py): nothing
is downloaded. The model (char_lm_model.py) is an embedding, nn.LSTM, nn.GRU or a causal
nn.TransformerEncoder, and an output layer, written once for minigrad and PyTorch. Each
epoch is a pass over the training text in windows of --seq-len characters, shuffled per
epoch; then the validation perplexity is printed and logged (OUT_DIR/char_lm_MODEL_log.jsonl)
and the run is checkpointed. At the end: the test perplexity, the perplexity curve
(OUT_DIR/char_lm_MODEL.png) and --sample lines of sampled text. Ctrl-C or SIGTERM ends
training after the step in progress, saves it and prints the command that resumes it;
the resumed run repeats the uninterrupted one's losses bit for bit.
"""
# ruff: noqa: E402  (the thread setting below must come before NumPy is imported)

import os

# as in train.digits: OpenBLAS's spinning threads cost more than they win here
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import math
import sys
from collections.abc import Sequence
from itertools import islice

import numpy as np

import minigrad as mg
from train.char_lm_arguments import (
    PROGRAM,
    check_resume_flags,
    default_save,
    parse_args,
    resume_command,
    usage_error,
)
from train.char_lm_checkpoint import load_run, save_run
from train.char_lm_config import DEFAULT_EPOCHS, RunConfig
from train.char_lm_data import (
    Corpus,
    decode,
    encode,
    epoch_batches,
    load_corpus,
    unigram_perplexity,
    windows,
)
from train.char_lm_loop import (
    Learner,
    Progress,
    new_learner,
    perplexity,
    torch_twin,
    train_epoch,
)
from train.char_lm_model import sample_ids
from train.char_lm_plot import plot_perplexity
from train.checkpoint_checks import CheckpointError
from train.cli import check_file, check_folder, missing_requirement
from train.heap import keep_freed_memory
from train.interrupt import StopSignals, exit_status, run_stoppable, signal_name
from train.run_log import RunLog

MAX_SAMPLE_LINE = 300  # characters: a sampled line that runs on is cut here


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status: 0, 1 for a checkpoint that cannot be
    resumed, 2 for a bad flag or a missing requirement, 128 + the signal's number when
    SIGINT (130) or SIGTERM (143) stopped it."""
    args = parse_args(argv)
    problem = missing_requirement(args)
    if problem:
        print(f"char_lm: {problem}", file=sys.stderr)
        return 2
    return run_stoppable(PROGRAM, train_command, args, "the last checkpoint")


def train_command(args: argparse.Namespace, stop: StopSignals) -> int:
    corpus = load_corpus()
    try:
        prompt_ids = encode(args.prompt, corpus.alphabet)
    except ValueError as exc:
        usage_error(f"argument --prompt: {exc}")
    if args.resume:
        try:
            learner, progress, config = load_run(
                args.resume, corpus.alphabet, lambda c: _steps_per_epoch(corpus, c),
                args.device)
        except CheckpointError as exc:
            print(f"char_lm: cannot resume from {exc}", file=sys.stderr)
            return 1
        begun = -(-progress.step // _steps_per_epoch(corpus, config))  # a ceiling
        epochs = check_resume_flags(args, config, begun)
    else:
        config = args.config
        try:
            _steps_per_epoch(corpus, config)
        except ValueError as exc:
            usage_error(str(exc))
        learner = new_learner(mg, config, len(corpus.alphabet), args.device)
        progress = Progress()
        epochs = args.epochs or DEFAULT_EPOCHS[config.model]
    args.save = args.save or default_save(args.out_dir, config.model)
    check_folder(PROGRAM, "--out-dir", args.out_dir)
    check_file(PROGRAM, "--save", args.save)
    try:
        os.makedirs(args.out_dir, exist_ok=True)
    except OSError as exc:
        usage_error(f"argument --out-dir: cannot create {args.out_dir}: {exc.strerror}")
    log = RunLog(args.out_dir, f"char_lm_{config.model}_log.jsonl")
    if args.resume:
        log.keep_until(progress.step)
    else:
        log.start_fresh()
    unigram = unigram_perplexity(_training_ids(corpus, config), corpus.validation,
                                 len(corpus.alphabet))
    parameters = sum(p.numel() for p in learner.model.parameters())
    print(f"{len(_training_ids(corpus, config)):,} training, {len(corpus.validation):,} "
          f"validation and {len(corpus.test):,} test characters, an alphabet of "
          f"{len(corpus.alphabet)}; unigram validation perplexity {unigram:.2f}")
    print(f"{config.summary()}: {parameters:,} parameters")
    with stop.deferred():
        stopped = train(learner, progress, config, corpus, epochs, args, log, stop)
    if stopped:
        print(f"char_lm: stopped by {signal_name(stop.requested)} at step {progress.step} "
              f"(epoch {len(progress.validation)} of {epochs} finished); saved to "
              f"{args.save}; resume with: {resume_command(args, config.model, epochs)}",
              file=sys.stderr)
        return exit_status(stop.requested)
    report(learner, progress, config, corpus, unigram, prompt_ids, args, log)
    return 0


def _training_ids(corpus: Corpus, config: RunConfig) -> np.ndarray:
    return corpus.train[:config.train_size]


def _steps_per_epoch(corpus: Corpus, config: RunConfig) -> int:
    """ValueError if the training text has fewer windows than a batch."""
    text = _training_ids(corpus, config)
    count = max(0, (len(text) - 1) // config.seq_len)
    if count < config.batch_size:
        raise ValueError(f"the training text ({len(text):,} characters) has {count} windows "
                         f"of seq_len {config.seq_len}, fewer than batch_size "
                         f"{config.batch_size}")
    return count // config.batch_size


def train(learner: Learner, progress: Progress, config: RunConfig, corpus: Corpus,
          epochs: int, args: argparse.Namespace, log: RunLog, stop: StopSignals) -> bool:
    """The epochs from progress.step to `epochs`, each followed by the validation
    perplexity, a log record and a checkpoint, with PyTorch's twin beside minigrad under
    --compare-torch. Returns whether a signal stopped it (after the step it came in,
    saved)."""
    train_windows = windows(_training_ids(corpus, config), config.seq_len)
    validation_windows = windows(corpus.validation, config.seq_len)
    steps_per_epoch = _steps_per_epoch(corpus, config)
    twin = (torch_twin(learner, config, len(corpus.alphabet), args.torch_threads)
            if args.compare_torch else None)
    for epoch in range(progress.step // steps_per_epoch, epochs):
        batches = epoch_batches(train_windows, config.batch_size, config.seed, epoch)
        losses, *seconds = train_epoch(learner, batches[progress.step % steps_per_epoch:],
                                       config.clip, lambda: bool(stop.requested))
        progress.losses += losses
        progress.step += len(losses)
        if progress.step % steps_per_epoch:  # a signal came before the epoch's end
            save_run(args.save, learner, progress, config, corpus.alphabet)
            return True
        epoch_losses = progress.losses[epoch * steps_per_epoch:]
        progress.validation.append(perplexity(learner, validation_windows, config.batch_size))
        record = {"step": progress.step, "epoch": epoch + 1,
                  **_epoch_figures("", epoch_losses, progress.validation[-1], *seconds)}
        print(f"epoch {epoch + 1:3d}/{epochs}  step {progress.step:6d}  "
              f"{_epoch_line(f'minigrad {mg.__version__}', record, '')}")
        if twin is not None:
            torch_losses, *torch_seconds = train_epoch(twin, batches, config.clip)
            torch_validation = perplexity(twin, validation_windows, config.batch_size)
            record.update(_epoch_figures("torch_", torch_losses, torch_validation,
                                         *torch_seconds))
            print(f"{'':25s}{_epoch_line(_torch_name(args.torch_threads), record, 'torch_')}")
        log.append(record)
        save_run(args.save, learner, progress, config, corpus.alphabet)
        if stop.requested:
            return True
    return False


def _epoch_figures(prefix: str, losses: list[float], validation: float,
                   seconds: float, cpu_seconds: float) -> dict:
    return {f"{prefix}train_perplexity": math.exp(float(np.mean(losses))),
            f"{prefix}validation_perplexity": validation, f"{prefix}seconds": seconds,
            f"{prefix}cpu_seconds": cpu_seconds}


def _epoch_line(name: str, record: dict, prefix: str) -> str:
    validation = record[f"{prefix}validation_perplexity"]
    return (f"{name:24s} train perplexity {record[f'{prefix}train_perplexity']:7.3f}  "
            f"validation perplexity {validation:7.3f} ({math.log2(validation):.3f} bits/char)"
            f"  {record[f'{prefix}seconds']:6.1f} s ({record[f'{prefix}cpu_seconds']:.1f} s CPU)")


def _torch_name(threads: int) -> str:
    import torch

    return f"PyTorch {torch.__version__.split('+')[0]} ({threads} thread{'s' * (threads > 1)})"


def report(learner: Learner, progress: Progress, config: RunConfig, corpus: Corpus,
           unigram: float, prompt_ids: np.ndarray, args: argparse.Namespace,
           log: RunLog) -> None:
    """The test perplexity, the perplexity curve and the sampled lines."""
    test = perplexity(learner, windows(corpus.test, config.seq_len), config.batch_size)
    unigram_test = unigram_perplexity(_training_ids(corpus, config), corpus.test,
                                      len(corpus.alphabet))
    print(f"checkpoint saved to {args.save}; test perplexity {test:.3f} "
          f"({math.log2(test):.3f} bits/char; unigram {unigram_test:.2f})")
    log.append({"step": progress.step, "test_perplexity": test})
    curve = os.path.join(args.out_dir, f"char_lm_{config.model}.png")
    plot_perplexity(progress.losses, {"validation": progress.validation},
                    _steps_per_epoch(corpus, config), unigram, curve)
    print(f"perplexity curve saved to {curve}")
    if args.sample:
        print(f"{args.sample} sampled lines (temperature {args.temperature}, seed "
              f"{args.sample_seed}):")
        for line in sample_lines(learner.model, corpus.alphabet, prompt_ids, args):
            print(f"  {line}")


def sample_lines(model, alphabet: str, prompt_ids: np.ndarray,
                 args: argparse.Namespace) -> list[str]:
    """The prompt and what the model writes after it, up to args.sample lines that are
    not blank (each cut at MAX_SAMPLE_LINE characters)."""
    drawn = islice(sample_ids(model, prompt_ids.tolist(), args.temperature,
                              args.sample_seed, args.device), args.sample * MAX_SAMPLE_LINE)
    text = decode(prompt_ids, alphabet)
    lines: list[str] = []
    for next_id in drawn:
        text += alphabet[next_id]
        if text.endswith("\n") or len(text) == MAX_SAMPLE_LINE:
            if text.strip():
                lines.append(text.rstrip("\n"))
            text = ""
            if len(lines) == args.sample:
                break
    return lines


if __name__ == "__main__":
    keep_freed_memory()  # a choice for the whole process: train/heap.py
    sys.exit(main())
