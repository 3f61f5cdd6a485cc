"""The command line of `python -m train.char_lm`. Every value is checked as it is parsed,
then the flags against each other and, for a resumed run, against the checkpoint's
config; any problem is one line on stderr and exit status 2."""

import argparse
import os
from collections.abc import Sequence
from typing import NoReturn

from train import cli
from train.char_lm_config import DEFAULT_EPOCHS, DEFAULTS, FIELD_RULES, RunConfig
from train.char_lm_model import MODEL_KINDS
from train.cli import checked, flag
from train.config import POSITIVE, POSITIVE_INT, Rule
from train.interrupt import command_line, options_given

PROGRAM = "char_lm"
# RunConfig fields settable by a flag of the same name (--seq-len, --batch-size, ...)
CONFIG_FIELDS = ("embedding", "hidden", "layers", "heads", "feedforward", "dropout",
                 "tie_weights", "seq_len", "batch_size", "lr", "clip", "seed", "train_size")
# fields the other kind of model does not have
ONLY_FOR = {"hidden": ("lstm", "gru"), "heads": ("transformer",),
            "feedforward": ("transformer",)}


def usage_error(message: str) -> NoReturn:
    """One line on stderr, exit status 2 (see train/cli.py)."""
    cli.usage_error(PROGRAM, message)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    args = _parser().parse_args(argv)
    if args.compare_torch and args.resume:
        usage_error("argument --compare-torch: not allowed with --resume (both models start "
                    "from the same initial weights)")
    if args.resume is None:
        args.model = args.model or "lstm"
        args.config = fresh_config(args)
    return args


def _parser() -> argparse.ArgumentParser:
    parser = cli.OneLineParser(
        program=PROGRAM, prog="python -m train.char_lm",
        description="Train a character-level language model (LSTM, GRU or causal "
                    "Transformer) on the help topics of Python's documentation, report its "
                    "perplexity and sample text from it.")
    parser.add_argument("--model", choices=MODEL_KINDS,
                        help="the network (default lstm)")
    parser.add_argument("--epochs", type=checked(POSITIVE_INT),
                        help="epochs in all, counting a resumed run's (default: "
                             + ", ".join(f"{k} {n}" for k, n in DEFAULT_EPOCHS.items()) + ")")
    for field in CONFIG_FIELDS:
        if field == "tie_weights":
            parser.add_argument("--tie-weights", action="store_const", const=True,
                                help="use the embedding as the output layer (needs --hidden "
                                     "equal to --embedding for lstm and gru)")
        else:
            parser.add_argument(flag(field), type=checked(FIELD_RULES[field]),
                                help=f"{FIELD_RULES[field]}; default {_default_text(field)}")
    cli.add_device_flag(parser)
    parser.add_argument("--out-dir", default="runs",
                        help="where the checkpoint, the log and the plot go")
    parser.add_argument("--save", metavar="PATH",
                        help="checkpoint to write (default OUT_DIR/char_lm_MODEL.safetensors)")
    parser.add_argument("--resume", metavar="PATH",
                        help="continue this checkpoint's run up to --epochs epochs (the "
                             "hyperparameters come from the checkpoint)")
    cli.add_compare_torch_flags(parser, "train the same model (same initial weights, same "
                                        "batches) in PyTorch beside it and print both per "
                                        "epoch")
    parser.add_argument("--sample", type=checked(Rule(int, 0)), default=3, metavar="N",
                        help="lines of text to sample after training (default 3)")
    parser.add_argument("--temperature", type=checked(POSITIVE),
                        default=0.8, help="the sampling temperature (default 0.8)")
    parser.add_argument("--sample-seed", type=checked(Rule(int, 0, 2**32 - 1)), default=0)
    parser.add_argument("--prompt", default="The ",
                        help="the text the samples continue (default 'The ')")
    return parser


def _default_text(field: str) -> str:
    """"64", or "lstm 3e-3, gru 3e-3, transformer 1e-3" where the models differ."""
    if field == "train_size":
        return "all the training part"
    defaults = {kind: DEFAULTS[kind][field] for kind in ONLY_FOR.get(field, MODEL_KINDS)}
    if len(set(defaults.values())) == 1:
        return str(next(iter(defaults.values())))
    return ", ".join(f"{kind} {value}" for kind, value in defaults.items())


def given_fields(args: argparse.Namespace) -> list[str]:
    return [field for field in CONFIG_FIELDS if getattr(args, field) is not None]


def fresh_config(args: argparse.Namespace) -> RunConfig:
    """The defaults of args.model, with the fields the flags set."""
    for field in given_fields(args):
        if args.model not in ONLY_FOR.get(field, MODEL_KINDS):
            usage_error(f"argument {flag(field)}: the {args.model} model has no {field}")
    values = {**DEFAULTS[args.model], **{field: getattr(args, field)
                                         for field in given_fields(args)}}
    try:
        return RunConfig(model=args.model, **values)
    except ValueError as exc:  # every field was checked: only a rule across fields is left
        field = str(exc).split(":")[0]
        usage_error(f"argument {flag(field)}: {str(exc).partition(': ')[2]}")


def check_resume_flags(args: argparse.Namespace, saved: RunConfig, epochs_begun: int) -> int:
    """The epochs of a resumed run, at least the `epochs_begun` of the checkpoint; a flag
    that would change the checkpoint's config is a usage error (the run would not be the
    one it continues)."""
    for field in ("model", *given_fields(args)):
        value, kept = getattr(args, field), getattr(saved, field)
        if value is not None and value != kept:
            usage_error(f"argument {flag(field)}: the checkpoint's run has {field} {kept}; a "
                        "resumed run keeps its hyperparameters (only --epochs may change)")
    epochs = args.epochs or DEFAULT_EPOCHS[saved.model]
    if epochs < epochs_begun:
        usage_error(f"argument --epochs: {epochs} is less than the {epochs_begun} epochs the "
                    "checkpoint has begun")
    return epochs


def default_save(out_dir: str, model: str) -> str:
    return os.path.join(out_dir, f"char_lm_{model}.safetensors")


def resume_command(args: argparse.Namespace, model: str, epochs: int) -> str:
    """The command that continues this run from its checkpoint, args.save, to `epochs`
    epochs, with the flags given that are not hyperparameters (the checkpoint has those)."""
    repeated = options_given(args, _parser(), ("device", "out_dir", "sample", "temperature",
                                                "sample_seed", "prompt"))
    if args.save != default_save(args.out_dir, model):
        repeated["--save"] = args.save
    return command_line([], "train.char_lm",
                        {"--resume": args.save, "--epochs": epochs, **repeated})
