"""The command line of `python -m train.toy_translate`, checked before anything is touched.

Every value is checked as it is parsed (each hyperparameter against its rule in
train/config.py), then the flags against each other, then the places the run will write
to; any problem is one argparse-style line on stderr and exit status 2, and no file has
been opened, created or truncated yet."""

import argparse
import os
from collections.abc import Sequence
from typing import NoReturn

from train import cli
from train.cli import checked, flag
from train.config import DEFAULTS, FIELD_RULES, GPU_DEFAULTS, POSITIVE_INT, Config
from train.data import tokenize_french
from train.interrupt import command_line, options_given
from train.run_log import LOG_NAME

# Config fields settable from the command line: --steps, --batch-size, ...
CONFIG_FIELDS = ("steps", "batch_size", "d_model", "layers", "heads", "ff", "dropout",
                 "lr_factor", "warmup", "seed", "train_size", "eval_every")


PROGRAM = "toy_translate"


def usage_error(message: str) -> NoReturn:
    """One line on stderr, exit status 2 (see train/cli.py)."""
    cli.usage_error(PROGRAM, message)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed and checked flags; `args.config` is the run's Config for a fresh run."""
    args = _parser().parse_args(argv)
    _check_combinations(args)
    if args.save is None:
        args.save = _default_save(args.out_dir)
    return args


def _default_save(out_dir: str) -> str:
    return os.path.join(out_dir, "toy_translate.safetensors")


def _parser() -> argparse.ArgumentParser:
    parser = cli.OneLineParser(
        program=PROGRAM, prog="python -m train.toy_translate",
        description="Train a Transformer on toy French->English translation, or translate "
                    "with a trained one.")
    cli.add_device_flag(parser)
    for field in CONFIG_FIELDS:
        cpu, gpu = getattr(DEFAULTS, field), getattr(GPU_DEFAULTS, field)
        parser.add_argument(flag(field), type=checked(FIELD_RULES[field]), default=None,
                            help=f"{FIELD_RULES[field]}; default {cpu} (CPU), {gpu} (GPU)")
    parser.add_argument("--beam-size", type=checked(POSITIVE_INT), default=4)
    parser.add_argument("--top-beams", type=checked(POSITIVE_INT), default=3,
                        help="how many of the beams to print; at most --beam-size")
    parser.add_argument("--out-dir", default="runs",
                        help="where the log, loss curve and default checkpoint go")
    parser.add_argument("--save", metavar="PATH",
                        help="checkpoint to write (default OUT_DIR/toy_translate.safetensors)")
    parser.add_argument("--resume", metavar="PATH",
                        help="continue this checkpoint's run (to --steps steps in all; the "
                             "other hyperparameters come from the checkpoint), or translate "
                             "with it")
    parser.add_argument("--translate", metavar="TEXT", type=_french_text,
                        help="translate TEXT with a trained checkpoint instead of training")
    parser.add_argument("--amp", action="store_true",
                        help="mixed precision: float16 matrix products under mg.autocast, "
                             "the loss scaled by mg.amp.GradScaler (on the CPU as correct as "
                             "on the GPU, and as slow as NumPy's float16)")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                        help="train with the model's forward compiled by mg.compile (the "
                             "same numbers, less Python per step); the default on the CPU "
                             "without --amp or --distributed (a plan replays eight batch "
                             "shapes, the others run eagerly); --no-compile runs eagerly")
    parser.add_argument("--distributed", action="store_true",
                        help="be one rank of a data-parallel run started by mpiexec -n N "
                             "(global batch = N x --batch-size); rank 0 alone logs, "
                             "evaluates and saves")
    parser.add_argument("--plot-attention", metavar="PNG",
                        help="save the encoder-decoder attention of the translated sentence "
                             "(\"je suis étudiant\" after training), one panel per head")
    return parser


def resume_command(args: argparse.Namespace, steps: int, world_size: int | None) -> str:
    """The command that continues this run from its checkpoint, args.save, to `steps`
    steps (under `mpiexec -n world_size` for a distributed run): the hyperparameters come
    from the checkpoint, the other flags given are repeated."""
    repeated = options_given(args, _parser(), ("device", "out_dir", "beam_size",
                                                "top_beams", "plot_attention", "compile"))
    if args.save != _default_save(args.out_dir):
        repeated["--save"] = args.save
    launcher = ["mpiexec", "-n", str(world_size)] if world_size else []
    return command_line(launcher, "train.toy_translate", {
        "--distributed": bool(world_size), "--resume": args.save, "--steps": steps,
        **repeated})


def _french_text(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # bytes Python could not decode arrive as surrogates
        bad = text[exc.start].encode("utf-8", "surrogateescape")
        raise argparse.ArgumentTypeError(
            f"the text is not valid UTF-8 (byte 0x{bad.hex()} at character {exc.start})"
        ) from None
    if not tokenize_french(text):
        raise argparse.ArgumentTypeError(f"no French words to translate in {text!r}")
    return text


def _check_combinations(args: argparse.Namespace) -> None:
    given = [field for field in CONFIG_FIELDS if getattr(args, field) is not None]
    if args.translate is not None and args.distributed:
        usage_error("argument --distributed: not allowed with --translate (translating "
                    "runs in one process)")
    if args.translate is not None and args.amp:
        usage_error("argument --amp: not allowed with --translate (translating runs in "
                    "float32)")
    if args.translate is not None and given:
        usage_error(f"argument {flag(given[0])}: not allowed with --translate (translating "
                    "uses the checkpoint's model)")
    if args.top_beams > args.beam_size:
        usage_error(f"argument --top-beams: {args.top_beams} is more than --beam-size "
                    f"{args.beam_size}")
    defaults = GPU_DEFAULTS if args.device == "gpu" else DEFAULTS
    d_model = args.d_model or defaults.d_model
    heads = args.heads or defaults.heads
    if d_model % heads:
        usage_error(f"argument --heads: --d-model {d_model} is not divisible by --heads "
                    f"{heads}")
    try:
        args.config = None if args.resume else defaults.updated(
            **{field: getattr(args, field) for field in CONFIG_FIELDS})
    except ValueError as exc:  # every field was checked: only a rule across fields is left
        usage_error(str(exc))


def check_resume_flags(args: argparse.Namespace, saved: Config, step: int,
                       amp: bool = False) -> Config:
    """The config of a resumed run: the checkpoint's, with --steps; a flag that would
    change another hyperparameter is a usage error (the run would not be the same). An
    --amp run (`amp`) resumes as one; --amp cannot make a float32 run mixed."""
    if args.amp and not amp:
        usage_error("argument --amp: the checkpoint's run was trained in float32; a "
                    "resumed run keeps its precision")
    for field in CONFIG_FIELDS:
        value = getattr(args, field)
        if field != "steps" and value is not None and value != getattr(saved, field):
            usage_error(f"argument {flag(field)}: the checkpoint's run has {field} "
                        f"{getattr(saved, field)}; a resumed run keeps its hyperparameters "
                        "(only --steps may change)")
    if args.steps is not None and args.steps < step:
        usage_error(f"argument --steps: {args.steps} is less than the checkpoint's step "
                    f"{step}")
    return saved.updated(steps=args.steps)


def check_outputs(args: argparse.Namespace, training: bool) -> None:
    """Make sure every file the command will write can be written, before it starts."""
    if training:
        cli.check_folder(PROGRAM, "--out-dir", args.out_dir)
        log_path = os.path.join(args.out_dir, LOG_NAME)
        if os.path.isdir(log_path):
            usage_error(f"argument --out-dir: {log_path} is a folder, not a log file")
        cli.check_file(PROGRAM, "--save", args.save)
    if args.plot_attention:
        cli.check_file(PROGRAM, "--plot-attention", args.plot_attention)
        _check_image_format(args.plot_attention)


def _check_image_format(path: str) -> None:
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    extension = os.path.splitext(path)[1].lstrip(".").lower()
    if extension not in formats:
        usage_error(f"argument --plot-attention: cannot save a {extension or 'nameless'} "
                    f"image; use one of {', '.join(sorted(formats))}")


def compiles(args: argparse.Namespace) -> bool:
    """Whether training compiles the model's forward: as --compile/--no-compile say, else
    on the CPU without --amp (an autocast region runs eagerly) or --distributed
    (collectives between processes do), where the replay pays."""
    if args.compile is not None:
        return args.compile
    return args.device == "cpu" and not args.amp and not args.distributed
