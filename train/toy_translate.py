"""Train the Transformer on toy French->English and translate with it.

    python -m train.toy_translate                        # train on the CPU (about 2 minutes)
    python -m train.toy_translate --device gpu           # a larger model on the GPU
    python -m train.toy_translate --translate "je suis étudiant"
    python -m train.toy_translate --resume runs/toy_translate.safetensors --steps 4000
    mpiexec -n 2 python -m train.toy_translate --distributed    # two processes, one model

A run logs every step's loss and learning rate (and the validation loss now and then)
as JSON lines in OUT_DIR/toy_translate_log.jsonl, then reports greedy exact match and
corpus BLEU on the unseen test sentences, prints beam-search translations, and saves the
checkpoint and the loss curve. `--resume` continues a saved run exactly: the same losses
as a run that was never interrupted.
"""
# ruff: noqa: E402  (the thread setting below must come before NumPy is imported)

import os

# OpenBLAS's worker threads spin while they wait: on this model's small matrices they
# win little on an idle machine and cost 4x on a busy one, so use one unless told otherwise
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
import time
from collections.abc import Sequence

import minigrad as mg
from train import distributed
from train.checkpoint import load_model, load_run, new_train_state, save_run
from train.config import DEFAULTS, GPU_DEFAULTS
from train.data import SEED_PAIRS, ToyTranslationData, make_dataset, tokenize_french
from train.evaluate import beam_translations, score_test_set
from train.lexicon import FIXED_PHRASES
from train.loop import IdPair, TrainState, append_jsonl, train
from train.plots import cross_attention, plot_attention, plot_loss_curve

__all__ = ["DEFAULTS", "GPU_DEFAULTS", "main"]

# a fixed phrase ("merci") is one sentence among 20,000: repeat it so that it is learned
PHRASE_COPIES = 50
SHOWN_TEST_SENTENCES = 3  # test sentences translated with beams at the end of a run
# Config fields settable from the command line: --steps, --batch-size, ...
CONFIG_FIELDS = ("steps", "batch_size", "d_model", "layers", "heads", "ff", "dropout",
                 "lr_factor", "warmup", "seed", "train_size", "eval_every")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m train.toy_translate",
        description="Train a Transformer on toy French->English translation, or translate "
                    "with a trained one.")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    for field in CONFIG_FIELDS:
        cpu, gpu = getattr(DEFAULTS, field), getattr(GPU_DEFAULTS, field)
        parser.add_argument("--" + field.replace("_", "-"), type=type(cpu), default=None,
                            help=f"default {cpu} (CPU), {gpu} (GPU)")
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--top-beams", type=int, default=3)
    parser.add_argument("--out-dir", default="runs",
                        help="where the log, loss curve and default checkpoint go")
    parser.add_argument("--save", metavar="PATH",
                        help="checkpoint to write (default OUT_DIR/toy_translate.safetensors)")
    parser.add_argument("--resume", metavar="PATH",
                        help="continue this checkpoint's run (to --steps steps in all; the "
                             "other hyperparameters come from the checkpoint), or translate "
                             "with it")
    parser.add_argument("--translate", metavar="TEXT",
                        help="translate TEXT with a trained checkpoint instead of training")
    parser.add_argument("--distributed", action="store_true",
                        help="be one rank of a data-parallel run started by mpiexec -n N "
                             "(global batch = N x --batch-size); rank 0 alone logs, "
                             "evaluates and saves")
    parser.add_argument("--plot-attention", metavar="PNG",
                        help="save the encoder-decoder attention of the translated sentence "
                             "(\"je suis étudiant\" after training), one panel per head")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = parse_args(argv)
    if args.device == "gpu" and not mg.cuda.is_available():
        print(f"toy_translate: --device gpu needs a CUDA GPU: {mg.cuda.unavailable_reason()}",
              file=sys.stderr)
        return 2
    if args.save is None:
        args.save = os.path.join(args.out_dir, "toy_translate.safetensors")
    if args.translate is not None:
        if args.distributed:
            print("toy_translate: --distributed trains; translate without it", file=sys.stderr)
            return 2
        return translate_command(args)
    shard = None
    if args.distributed:
        try:
            shard = distributed.join(args)
        except distributed.FlagMismatch as exc:
            if exc.shard.is_main:  # one line for the job, not one per rank
                print(f"toy_translate: {exc}", file=sys.stderr)
            return 2
    return train_command(args, shard)


def train_command(args: argparse.Namespace, shard=None) -> int:
    """Train (or resume), save, then evaluate on the test set and show translations. In a
    data-parallel run (`shard`), rank 0 alone writes files and reports."""
    main_rank = shard is None or shard.is_main
    if main_rank:
        os.makedirs(args.out_dir, exist_ok=True)
    log_path = os.path.join(args.out_dir, "toy_translate_log.jsonl")
    if args.resume:
        state, config, src_vocab, tgt_vocab = load_run(args.resume, args.device)
        config = config.updated(steps=args.steps)
    else:
        defaults = GPU_DEFAULTS if args.device == "gpu" else DEFAULTS
        config = defaults.updated(**{field: getattr(args, field) for field in CONFIG_FIELDS})
        state = None
        if main_rank:
            open(log_path, "w").close()  # a fresh run starts a fresh log
    data = make_dataset(seed=config.seed, n_train=config.train_size)
    if state is None:
        state = new_train_state(config, data.src_vocab, data.tgt_vocab, args.device)
    elif (src_vocab, tgt_vocab) != (data.src_vocab, data.tgt_vocab):
        print(f"toy_translate: {args.resume} was trained on other vocabularies than this "
              "data set's", file=sys.stderr)
        return 1
    print(f"{len(data.train)} training pairs, vocabularies {len(data.src_vocab)} French / "
          f"{len(data.tgt_vocab)} English; {config}")
    started = time.perf_counter()
    train(state, training_pairs(data), data.encode(data.val), steps=config.steps,
          batch_size=config.batch_size, seed=config.seed,
          label_smoothing=config.label_smoothing, device=args.device,
          eval_every=config.eval_every, log=lambda record: append_jsonl(log_path, record),
          shard=shard)
    if not main_rank:
        return 0
    print(f"trained to step {state.step} in {time.perf_counter() - started:.0f} s")
    save_run(args.save, state, config, data.src_vocab, data.tgt_vocab)
    print(f"checkpoint saved to {args.save}")
    report(args, state, data, log_path)
    return 0


def training_pairs(data: ToyTranslationData) -> list[IdPair]:
    """The training pairs as ids, each fixed phrase and seed example PHRASE_COPIES times."""
    phrases = set(FIXED_PHRASES) | {tuple(tokenize_french(fr)) for fr, _ in SEED_PAIRS}
    repeated = [pair for pair in data.train if tuple(pair[0]) in phrases]
    return data.encode(data.train + repeated * (PHRASE_COPIES - 1))


def report(args: argparse.Namespace, state: TrainState, data: ToyTranslationData,
           log_path: str) -> None:
    """Test-set scores, beam translations of the seed examples and a few test sentences,
    the loss curve and, if asked, the attention heatmap."""
    scores = score_test_set(state.model, data.test, data.src_vocab, data.tgt_vocab,
                            args.device)
    print(f"test set ({len(data.test)} unseen sentences): exact match "
          f"{100 * scores.exact_match:.1f}%, BLEU {scores.bleu:.1f}")
    append_jsonl(log_path, {"step": state.step, "test_exact_match": scores.exact_match,
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
        print(f"toy_translate: no checkpoint at {path}; train one first with "
              "python -m train.toy_translate", file=sys.stderr)
        return 1
    model, src_vocab, tgt_vocab = load_model(path, args.device)
    source = tokenize_french(args.translate)
    unknown = src_vocab.unknown_words(source)
    if not source or unknown:
        words = ", ".join(repr(word) for word in unknown) or "none at all"
        print(f"toy_translate: cannot translate, words not in the French vocabulary: {words}",
              file=sys.stderr)
        return 1
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
    plot_attention(weights, source, translation, args.plot_attention)
    print(f"attention heatmap saved to {args.plot_attention}")


if __name__ == "__main__":
    sys.exit(main())
