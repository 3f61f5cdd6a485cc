"""Train the Transformer on toy French->English and translate with it.

    python -m train.toy_translate                        # train on the CPU (about 2 minutes)
    python -m train.toy_translate --device gpu           # a larger model on the GPU
    python -m train.toy_translate --translate "je suis étudiant"
    python -m train.toy_translate --resume runs/toy_translate.safetensors --steps 4000
    python -m train.toy_translate --device gpu --amp     # mixed precision (float16)
    python -m train.toy_translate --no-compile           # eagerly, without mg.compile

A run logs every step's loss and learning rate (and the validation loss now and then)
as JSON lines in OUT_DIR/toy_translate_log.jsonl, then reports greedy exact match and
corpus BLEU on the unseen test sentences, prints beam-search translations, and saves the
checkpoint and the loss curve. `--resume` continues a saved run exactly: the same losses
as a run that was never interrupted. On the CPU the model's forward is compiled by
mg.compile (docs/compile.md): the eager run's numbers, bit for bit, with less Python per
step; `--no-compile` runs eagerly.

Ctrl-C (SIGINT) or SIGTERM ends training after the step in progress: the run is saved
there, a line says where and the command that resumes it, and the exit status is 130 or
143; a second signal stops at once, leaving the previous checkpoint whole.

Bad input is one line on stderr, never a traceback: a bad flag exits with status 2
before any file is touched (train/arguments.py); a bad checkpoint, text the model cannot
take or a loss that turns NaN exits with status 1. Under --distributed an error on any
rank ends every rank (train/distributed.py).
"""
# ruff: noqa: E402  (the thread setting below must come before NumPy is imported)

import os

# OpenBLAS's worker threads spin while they wait: on this model's small matrices they
# win little on an idle machine and cost 4x on a busy one, so use one unless told otherwise
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import minigrad as mg
from train import distributed
from train.arguments import (
    check_outputs,
    check_resume_flags,
    compiles,
    parse_args,
    resume_command,
)
from train.checkpoint import load_model, load_run, new_train_state, save_run
from train.checkpoint_checks import CheckpointError
from train.config import DEFAULTS, GPU_DEFAULTS, Config
from train.data import SEED_PAIRS, ToyTranslationData, make_dataset, tokenize_french
from train.evaluate import beam_translations, max_source_words, score_test_set
from train.heap import keep_freed_memory
from train.interrupt import Interrupted, StopSignals, exit_status, signal_name
from train.lexicon import FIXED_PHRASES
from train.loop import IdPair, LossNotFinite, TrainState, train
from train.plots import cross_attention, plot_attention, plot_loss_curve
from train.run_log import RunLog

__all__ = ["DEFAULTS", "GPU_DEFAULTS", "main"]

# a fixed phrase ("merci") is one sentence among 20,000: repeat it so that it is learned
PHRASE_COPIES = 50
SHOWN_TEST_SENTENCES = 3  # test sentences translated with beams at the end of a run


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status: 0, 1 when it could not be done (a bad
    checkpoint, input the model cannot take, a diverged run, a full disk), 2 for a bad
    command line (checked before anything is touched), 128 + the signal's number when
    SIGINT (130) or SIGTERM (143) stopped it.

    In a distributed run an error ends every rank: the ranks agree on errors they can
    meet at, and any other one prints its line on its rank and aborts the job."""
    args = parse_args(argv)
    if args.device == "gpu" and not mg.cuda.is_available():
        print(f"toy_translate: --device cuda needs a CUDA GPU: {mg.cuda.unavailable_reason()}",
              file=sys.stderr)
        return 2
    shard = None
    with StopSignals() as stop:
        try:
            if args.translate is not None:
                return translate_command(args)
            if args.distributed:
                shard = distributed.join(args)
            return train_command(args, stop, shard)
        except BaseException as exc:
            if isinstance(exc, distributed.FlagMismatch):
                shard = exc.shard
            status, line = _status_and_line(exc, args, shard)
            if shard is None or isinstance(exc, _AGREED_FAILURES):
                if line and (shard is None or shard.is_main):  # one line for the job
                    print(line, file=sys.stderr)
                return status
            if line:  # on a line of its own: rank 0's progress bar may be mid-line
                print(("" if shard.is_main else "\n") + line, file=sys.stderr)
            distributed.abort(status)  # the other ranks may be waiting for this one


# raised on every rank of a distributed run at the same point, so every rank can return
_AGREED_FAILURES = (distributed.FlagMismatch, distributed.RankFailed, LossNotFinite)


def _status_and_line(exc: BaseException, args: argparse.Namespace,
                     shard) -> tuple[int, str | None]:
    """The exit status and the line to print (None when it was printed already) for an
    error the command expects; any other exception is a bug and is raised again."""
    if isinstance(exc, distributed.RankFailed):
        return exc.status, exc.text.rstrip("\n") or None
    if isinstance(exc, SystemExit):  # a usage error: argparse or usage_error printed it
        return exc.code, None
    if isinstance(exc, distributed.FlagMismatch):
        return 2, f"toy_translate: {exc}"
    if isinstance(exc, Interrupted):
        message = f"stopped at once by {signal_name(exc.signal_number)}"
        if args.translate is None:
            message += f"; {args.save} is as it was"
        return exit_status(exc.signal_number), _line(message, shard)
    if isinstance(exc, LossNotFinite):
        return 1, _line(f"{exc}: training stopped and nothing was saved ({args.save} is as "
                        "it was); a smaller --lr-factor or a longer --warmup may help", shard)
    if isinstance(exc, CheckpointError):
        return 1, _line(str(exc), shard)
    if isinstance(exc, MemoryError):
        return 1, _line(f"out of memory: {exc}", shard)
    if isinstance(exc, OSError):  # the disk filled up, a folder went away...
        where = f"{exc.filename}: " if exc.filename else ""
        return 1, _line(f"{where}{exc.strerror or exc}", shard)
    raise exc


def _line(message: str, shard) -> str:
    """The command's one line for `message`; in a distributed run a rank other than 0
    names itself."""
    rank = f"rank {shard.rank}: " if shard is not None and not shard.is_main else ""
    return f"toy_translate: {rank}{message}"


def fail(message: str) -> int:
    """Print one line on stderr; the exit status of a command that could not be done."""
    print(f"toy_translate: {message}", file=sys.stderr)
    return 1


@dataclass
class PreparedRun:
    """What training starts from: the state (fresh or resumed), its config, the data and,
    on the rank that writes files, the log."""

    state: TrainState
    config: Config
    data: ToyTranslationData
    log: RunLog | None


def prepare_run(args: argparse.Namespace, main_rank: bool) -> PreparedRun:
    """Check everything, then set up the run; only then, and only on `main_rank`, is a
    file written (the log)."""
    state = None
    if args.resume:
        state, saved_config, src_vocab, tgt_vocab = load_run(args.resume, args.device)
        config = check_resume_flags(args, saved_config, state.step,
                                    amp=state.scaler.is_enabled())
    else:
        config = args.config
    if main_rank:
        check_outputs(args, training=True)
    data = make_dataset(seed=config.seed, n_train=config.train_size)
    if state is not None and (src_vocab, tgt_vocab) != (data.src_vocab, data.tgt_vocab):
        raise CheckpointError(f"{args.resume} was trained on other vocabularies than this "
                              "data set's")
    # everything is checked: from here on, files are written (by rank 0 alone)
    log = None
    if main_rank:
        os.makedirs(args.out_dir, exist_ok=True)
        log = RunLog(args.out_dir)
    if state is None:
        state = new_train_state(config, data.src_vocab, data.tgt_vocab, args.device,
                                amp=args.amp)
        if log is not None:
            log.start_fresh()
    elif log is not None and (dropped := log.keep_until(state.step)):
        print(f"{log.path}: dropped {dropped} lines logged after step {state.step}, the "
              "checkpoint's")
    return PreparedRun(state, config, data, log)


def train_command(args: argparse.Namespace, stop: StopSignals, shard=None) -> int:
    """Train (or resume), save, then evaluate on the test set and show translations. In a
    data-parallel run (`shard`, see train/distributed.py) rank 0 alone writes files and
    reports; every rank trains.

    A signal (see train/interrupt.py) ends training after the step it came in; the run is
    saved there and the command says how to resume it."""
    main_rank = shard is None or shard.is_main
    run = distributed.settle(shard, lambda: prepare_run(args, main_rank),
                             lambda exc: _status_and_line(exc, args, shard))
    state, config, data = run.state, run.config, run.data
    if compiles(args):  # in place, so that checkpoints keep the model's own names
        state.model.forward = mg.compile(state.model.forward)
        # batches of similar-length sentences come in more shapes than the plans kept:
        # the other shapes run eagerly, with the same numbers (said in --help)
        warnings.filterwarnings("ignore", message=r"mg\.compile: .*\(cache_size_limit\)",
                                category=RuntimeWarning)
    print(f"{len(data.train)} training pairs, vocabularies {len(data.src_vocab)} French / "
          f"{len(data.tgt_vocab)} English; {config}")
    started = time.perf_counter()
    with stop.deferred():
        stopped_by = train(
            state, training_pairs(data), data.encode(data.val), steps=config.steps,
            batch_size=config.batch_size, seed=config.seed,
            label_smoothing=config.label_smoothing, device=args.device,
            eval_every=config.eval_every, log=run.log.append if run.log else None,
            shard=shard, stop=stop)
        if not main_rank:
            return exit_status(stopped_by) if stopped_by else 0
        print(f"trained to step {state.step} in {time.perf_counter() - started:.0f} s")
        save_run(args.save, state, config, data.src_vocab, data.tgt_vocab)
    if stopped_by:
        world_size = None if shard is None else shard.world_size
        print(f"toy_translate: stopped by {signal_name(stopped_by)} at step {state.step} of "
              f"{config.steps}; saved to {args.save}; resume with: "
              f"{resume_command(args, config.steps, world_size)}", file=sys.stderr)
        return exit_status(stopped_by)
    print(f"checkpoint saved to {args.save}")
    try:
        report(args, state, data, run.log)
    except Interrupted as exc:
        print(f"toy_translate: stopped by {signal_name(exc.signal_number)} while reporting; "
              f"the trained run is saved in {args.save}", file=sys.stderr)
        return exit_status(exc.signal_number)
    return 0


def training_pairs(data: ToyTranslationData) -> list[IdPair]:
    """The training pairs as ids, each fixed phrase and seed example PHRASE_COPIES times."""
    phrases = set(FIXED_PHRASES) | {tuple(tokenize_french(fr)) for fr, _ in SEED_PAIRS}
    repeated = [pair for pair in data.train if tuple(pair[0]) in phrases]
    return data.encode(data.train + repeated * (PHRASE_COPIES - 1))


def report(args: argparse.Namespace, state: TrainState, data: ToyTranslationData,
           log: RunLog) -> None:
    """Test-set scores, beam translations of the seed examples and a few test sentences,
    the loss curve and, if asked, the attention heatmap."""
    scores = score_test_set(state.model, data.test, data.src_vocab, data.tgt_vocab,
                            args.device)
    print(f"test set ({len(data.test)} unseen sentences): exact match "
          f"{100 * scores.exact_match:.1f}%, BLEU {scores.bleu:.1f}")
    log.append({"step": state.step, "test_exact_match": scores.exact_match,
                "test_bleu": scores.bleu})
    examples = [(tokenize_french(fr), en) for fr, en in SEED_PAIRS]
    examples += [(src, " ".join(tgt)) for src, tgt in data.test[:SHOWN_TEST_SENTENCES]]
    beams = beam_translations(state.model, [src for src, _ in examples], data.src_vocab,
                              data.tgt_vocab, args.device, args.beam_size, args.top_beams)
    for (source, reference), hypotheses in zip(examples, beams, strict=True):
        print_beams(" ".join(source), hypotheses, reference)
    curve_path = os.path.join(args.out_dir, "toy_translate_loss.png")
    plot_loss_curve(state.losses, state.val_losses, curve_path)
    print(f"loss curve saved to {curve_path}")
    if args.plot_attention:
        source, _ = examples[0]
        save_attention(state.model, source, beams[0][0][0].split(), data, args)


def translate_command(args: argparse.Namespace) -> int:
    """Translate args.translate with a saved checkpoint and print the top beams."""
    path = args.resume or args.save
    if not os.path.exists(path):
        return fail(f"no checkpoint at {path}; train one first with "
                    "python -m train.toy_translate")
    check_outputs(args, training=False)
    model, src_vocab, tgt_vocab = load_model(path, args.device)
    source = tokenize_french(args.translate)
    if len(source) > max_source_words(model):
        return fail(f"cannot translate {len(source)} words: this model takes at most "
                    f"{max_source_words(model)} words")
    unknown = src_vocab.unknown_words(source)
    if unknown:
        words = ", ".join(repr(word) for word in unknown)
        return fail(f"cannot translate, words not in the French vocabulary: {words}")
    beams = beam_translations(model, [source], src_vocab, tgt_vocab, args.device,
                              args.beam_size, args.top_beams)[0]
    print_beams(" ".join(source), beams)
    if args.plot_attention:
        data = ToyTranslationData([], [], [], src_vocab, tgt_vocab)
        save_attention(model, source, beams[0][0].split(), data, args)
    return 0


def print_beams(source: str, hypotheses: list[tuple[str, float]],
                reference: str | None = None) -> None:
    """The source, then its best translations with their length-penalized scores."""
    print(source + (f"   (reference: {reference})" if reference is not None else ""))
    for rank, (text, score) in enumerate(hypotheses, start=1):
        print(f"  {rank}. {text}   [score {score:.3f}]")


def save_attention(model, source: list[str], translation: list[str],
                   data: ToyTranslationData, args: argparse.Namespace) -> None:
    weights = cross_attention(model, source, translation, data.src_vocab, data.tgt_vocab,
                              args.device)
    os.makedirs(os.path.dirname(os.path.abspath(args.plot_attention)), exist_ok=True)
    plot_attention(weights, source, translation, args.plot_attention)
    print(f"attention heatmap saved to {args.plot_attention}")


if __name__ == "__main__":
    keep_freed_memory()  # a choice for the whole process: train/heap.py
    sys.exit(main())
