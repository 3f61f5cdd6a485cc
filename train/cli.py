"""What the training commands' command lines share: every error is one argparse-style
line on stderr with exit status 2 (argparse's own usage block is not printed), a flag's
value is checked as it is parsed, and a place a command will write to, and what a run
needs, are checked before any work starts."""

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from typing import NoReturn

import minigrad as mg
from minigrad.serialization.atomic import writes_through
from train.config import POSITIVE_INT, Rule


def usage_error(program: str, message: str) -> NoReturn:
    """Print `program: error: message (see --help)` and exit with status 2."""
    print(f"{program}: error: {message} (see --help)", file=sys.stderr)
    raise SystemExit(2)


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line: `program: error: ... (see --help)`
    (`program` is the command's short name, `prog` the usage line's)."""

    def __init__(self, *args, program: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.program = program

    def error(self, message: str) -> NoReturn:
        usage_error(self.program, message)


def flag(field: str) -> str:
    """The flag of a config field: batch_size -> --batch-size."""
    return "--" + field.replace("_", "-")


def checked(rule: Rule) -> Callable[[str], int | float]:
    """An argparse `type`: the flag's value parsed and checked against `rule`."""
    def parse(text: str):
        try:
            return rule.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = rule.kind.__name__  # argparse's "invalid int value" names it
    return parse


def add_compare_torch_flags(parser: argparse.ArgumentParser, what_it_does: str) -> None:
    """--compare-torch (its help is `what_it_does`) and --torch-threads."""
    parser.add_argument("--compare-torch", action="store_true", help=what_it_does)
    parser.add_argument("--torch-threads", type=checked(POSITIVE_INT), default=1,
                        help="PyTorch's intra-op threads for --compare-torch (default 1, as "
                             "minigrad's OpenBLAS here)")


def missing_requirement(args: argparse.Namespace) -> str:
    """Why a run with --compare-torch, --device and --resume cannot start, in one line (""
    when it can)."""
    if args.compare_torch:
        try:
            import torch  # noqa: F401  (deferred: only the comparison needs it)
        except ImportError:
            return "--compare-torch needs PyTorch: pip install torch"
    if args.device == "gpu" and not mg.cuda.is_available():
        return f"--device cuda needs a CUDA GPU: {mg.cuda.unavailable_reason()}"
    if args.resume and not os.path.exists(args.resume):
        return f"no checkpoint at {args.resume}"
    return ""


def check_file(program: str, option: str, path: str) -> None:
    """A file to create or replace, or a character device or FIFO to write through (only
    looked at, never opened: opening a FIFO would wait for its reader)."""
    if os.path.isdir(path):
        usage_error(program, f"argument {option}: {path} is a folder, not a file")
    try:
        if writes_through(path):
            return  # nothing is created in its folder
    except OSError as exc:
        usage_error(program, f"argument {option}: {path}: {exc.strerror}")
    check_folder(program, option, os.path.dirname(os.path.abspath(path)))


def check_folder(program: str, option: str, folder: str) -> None:
    """The folder, or the nearest part of its path that exists, must take a new file."""
    existing = os.path.abspath(folder)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        usage_error(program, f"argument {option}: cannot create {folder}: {existing} is a file")
    try:  # an unnamed file, gone when closed: os.access is wrong for root and NFS
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        usage_error(program, f"argument {option}: cannot write in {existing}: "
                             f"{exc.strerror or exc}")


def add_device_flag(parser: argparse.ArgumentParser) -> None:
    """--device cpu|cuda (PyTorch's spelling; "gpu" and "cuda:0" are accepted too), read
    as "cpu" or "gpu"."""
    parser.add_argument("--device", type=_device_name, default="cpu", metavar="{cpu,cuda}",
                        help="where to train: cpu (default) or cuda (the GPU, through CuPy)")


def _device_name(text: str) -> str:
    if text == "cpu":
        return "cpu"
    if text in ("cuda", "cuda:0", "gpu", "gpu:0"):
        return "gpu"
    raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from cpu, cuda)")
