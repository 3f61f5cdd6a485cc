"""Train a small CNN on scikit-learn's bundled 8x8 handwritten digits, with PyTorch's API.

    python -m train.digits                      # trains on the CPU, then checks the checkpoint
    python -m train.digits --compare-torch      # and the same model in PyTorch, timed beside it
    python -m train.digits --resume runs/digits.safetensors --epochs 40
    python -m train.digits --compile            # the model's forward compiled (mg.compile)

The model is two conv + max-pool blocks and a linear head, written once for both
libraries (`build_model(mg)` and `build_model(torch)`); it trains with a DataLoader over a
TensorDataset, Adam under a cosine learning-rate schedule and a checkpoint after every
epoch, then reports its accuracy on held-out images it never trained on. The data ship
with scikit-learn (`pip install 'minigrad[train]'`): nothing is downloaded. Ctrl-C or
SIGTERM ends training after the epoch in progress and its checkpoint (an epoch takes well
under a second) and prints the command that resumes it.
"""
# ruff: noqa: E402  (the thread setting below must come before NumPy is imported)

import os

# as in train.toy_translate: OpenBLAS's spinning threads cost more than they win here
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import optim
from minigrad.optim.lr_scheduler import CosineAnnealingLR
from minigrad.utils.data import DataLoader, TensorDataset
from train import cli
from train.checkpoint_checks import save_entries
from train.config import POSITIVE, POSITIVE_INT, Rule
from train.heap import keep_freed_memory
from train.interrupt import (
    StopSignals,
    command_line,
    exit_status,
    options_given,
    run_stoppable,
    signal_name,
)

IMAGE_SIZE = 8
CLASSES = 10
_FRACTION = Rule(float, 0.0, 1.0, low_open=True, high_open=True)


@dataclass
class Digits:
    """Images (N, 1, 8, 8) scaled to [-1, 1] (float32) and labels (N,) (int64), split
    once by a seeded permutation into training and held-out parts."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


@dataclass
class RunResult:
    framework: str
    seconds: float  # training loop only: batches, steps and the schedule
    accuracy: float  # on the held-out images
    epochs_done: int  # in all, counting those of the run it resumed


def build_model(library):
    """Conv(1->16, 3x3) ReLU MaxPool(2) -> Conv(16->32, 3x3) ReLU MaxPool(2) -> Linear(128
    -> 10), from `library.nn`: minigrad and torch take the same code, and the same
    state_dict names."""
    nn = library.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 16 x 4 x 4
        nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 2 x 2
        nn.Flatten(), nn.Linear(32 * 2 * 2, CLASSES),
    )


def load_data(test_fraction: float, seed: int) -> Digits:
    """scikit-learn's 1,797 digits, a `test_fraction` of them held out."""
    from sklearn.datasets import load_digits  # deferred: only this command needs it

    digits = load_digits()
    images = (digits.images.astype(np.float32) / 8.0 - 1.0).reshape(-1, 1, IMAGE_SIZE,
                                                                    IMAGE_SIZE)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    held_out = int(round(len(labels) * test_fraction))
    test, train = order[:held_out], order[held_out:]
    return Digits(images[train], labels[train], images[test], labels[test])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    args = _parser().parse_args(argv)
    args.save = args.save or _default_save(args.out_dir)
    cli.check_folder(PROGRAM, "--out-dir", args.out_dir)
    cli.check_file(PROGRAM, "--save", args.save)
    return args


PROGRAM = "digits"


def _default_save(out_dir: str) -> str:
    return os.path.join(out_dir, "digits.safetensors")


def _parser() -> argparse.ArgumentParser:
    parser = cli.OneLineParser(
        program=PROGRAM, prog="python -m train.digits",
        description="Train a small CNN on scikit-learn's 8x8 digits and report its accuracy "
                    "on held-out images.")
    parser.add_argument("--epochs", type=cli.checked(POSITIVE_INT), default=30,
                        help="epochs in all (default 30)")
    parser.add_argument("--batch-size", type=cli.checked(POSITIVE_INT), default=32)
    parser.add_argument("--lr", type=cli.checked(POSITIVE), default=3e-3,
                        help="Adam's initial learning rate, annealed to 0 along a cosine")
    parser.add_argument("--test-fraction", type=cli.checked(_FRACTION), default=0.2,
                        help="share of the images held out (default 0.2: 359 images)")
    parser.add_argument("--seed", type=cli.checked(Rule(int, 0, 2**64 - 1)), default=0)
    cli.add_device_flag(parser)
    parser.add_argument("--out-dir", default="runs", help="where the checkpoint goes")
    parser.add_argument("--save", metavar="PATH",
                        help="checkpoint to write (default OUT_DIR/digits.safetensors)")
    parser.add_argument("--resume", metavar="PATH",
                        help="continue this checkpoint's run up to --epochs epochs")
    parser.add_argument("--compile", action="store_true",
                        help="train with the model's forward compiled by mg.compile (the "
                             "same numbers, less Python per step)")
    cli.add_compare_torch_flags(parser, "then train the same model (same initial weights) "
                                        "in PyTorch and print both times and accuracies")
    return parser


def resume_command(args: argparse.Namespace) -> str:
    """The command that continues this run from its checkpoint, args.save, to
    args.epochs epochs, with the other flags given."""
    repeated = options_given(args, _parser(), ("batch_size", "lr", "test_fraction", "seed",
                                                "device", "out_dir", "compile",
                                                "compare_torch", "torch_threads"))
    if args.save != _default_save(args.out_dir):
        repeated["--save"] = args.save
    return command_line([], "train.digits",
                        {"--resume": args.save, "--epochs": args.epochs, **repeated})


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status: 0, 1 for a checkpoint that cannot be
    resumed, 2 for a missing requirement, 128 + the signal's number when SIGINT (130) or
    SIGTERM (143) stopped it. The first signal during training ends it after the epoch in
    progress, whose checkpoint is then saved; any other stops at once (checkpoints are
    written atomically, so the last one stays whole)."""
    args = parse_args(argv)
    problem = _missing_scikit_learn() or cli.missing_requirement(args)
    if problem:
        print(f"digits: {problem}", file=sys.stderr)
        return 2
    return run_stoppable(PROGRAM, train_command, args, args.save)


def train_command(args: argparse.Namespace, stop: StopSignals) -> int:
    """Train (or resume), reload the checkpoint and score it, and with --compare-torch
    train PyTorch's twin; a signal `stop` recorded ends training after its epoch."""
    data = load_data(args.test_fraction, args.seed)
    print(f"{len(data.train_labels)} training and {len(data.test_labels)} held-out images "
          f"of {IMAGE_SIZE}x{IMAGE_SIZE} pixels")
    mg.manual_seed(args.seed)
    model = build_model(mg).to(args.device)
    if args.compile:  # in place, so that checkpoints keep the model's own names
        model.forward = mg.compile(model.forward)
    initial_weights = {name: t.numpy().copy() for name, t in model.state_dict().items()}
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    scheduler = CosineAnnealingLR(optimizer, T_max=args.epochs)
    first_epoch = 0
    if args.resume:
        try:
            first_epoch = load_checkpoint(args.resume, model, optimizer, scheduler)
        except (OSError, KeyError, RuntimeError, ValueError) as exc:
            print(f"digits: cannot resume from {args.resume}: {exc}", file=sys.stderr)
            return 1
    with stop.deferred():
        result = train(model, optimizer, scheduler, data, args, first_epoch, stop)
    print(f"trained {result.epochs_done - first_epoch} epochs in {result.seconds:.1f} s; "
          f"held-out accuracy {result.accuracy:.2%}")
    if stop.requested:
        print(f"digits: stopped by {signal_name(stop.requested)} after epoch "
              f"{result.epochs_done} of {args.epochs}; saved to {args.save}; resume with: "
              f"{resume_command(args)}", file=sys.stderr)
        return exit_status(stop.requested)
    reloaded = build_model(mg).to(args.device)
    reloaded.load_state_dict(mg.load(args.save)["model"])
    print(f"checkpoint {args.save} reloaded: held-out accuracy "
          f"{accuracy(reloaded, data.test_images, data.test_labels, args.device):.2%}")
    results = [result]
    if args.compare_torch:
        results.append(train_torch(initial_weights, data, args))
    print_table(results)
    return 0


def _missing_scikit_learn() -> str:
    try:
        import sklearn  # noqa: F401  (deferred: only this command needs it)
    except ImportError:
        return ("the digits come with scikit-learn, which is not installed: "
                "pip install 'minigrad[train]'")
    return ""


def train(model, optimizer, scheduler, data: Digits, args: argparse.Namespace,
          first_epoch: int, stop: StopSignals) -> RunResult:
    """Epochs first_epoch..args.epochs-1: a pass over the shuffled training images (an
    order seeded per epoch, so a resumed run sees the batches an unbroken one would), a
    schedule step, the held-out accuracy and a checkpoint. A signal `stop` recorded ends
    the run after the checkpoint of the epoch it came in."""
    dataset = TensorDataset(mg.tensor(data.train_images), mg.tensor(data.train_labels))
    seconds = 0.0
    epochs_done = first_epoch
    for epoch in range(first_epoch, args.epochs):
        started = time.perf_counter()
        loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                            generator=np.random.default_rng([args.seed, epoch]))
        model.train()
        losses = []
        for images, labels in loader:
            loss = F.cross_entropy(model(images.to(args.device)), labels.to(args.device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        learning_rate = scheduler.get_last_lr()[0]
        scheduler.step()
        seconds += time.perf_counter() - started
        held_out = accuracy(model, data.test_images, data.test_labels, args.device)
        print(f"epoch {epoch + 1:3d}/{args.epochs}  lr {learning_rate:.5f}  "
              f"loss {np.mean(losses):.4f}  held-out accuracy {held_out:.2%}")
        save_checkpoint(args.save, model, optimizer, scheduler, epoch + 1)
        epochs_done = epoch + 1
        if stop.requested:
            break
    return RunResult(f"minigrad {mg.__version__}", seconds,
                     accuracy(model, data.test_images, data.test_labels, args.device),
                     epochs_done)


def accuracy(model, images: np.ndarray, labels: np.ndarray, device: str) -> float:
    """The share of images whose highest logit is their label."""
    model.eval()
    with mg.no_grad():
        predicted = model(mg.tensor(images, device=device)).argmax(1).numpy()
    return float(np.mean(predicted == labels))


def save_checkpoint(path: str, model, optimizer, scheduler, epochs_done: int) -> None:
    save_entries(path, {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "epoch": epochs_done})


def load_checkpoint(path: str, model, optimizer, scheduler) -> int:
    """Restore a run saved by save_checkpoint; returns the epochs it had done."""
    saved = mg.load(path)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    return int(saved["epoch"])


def train_torch(initial_weights: dict, data: Digits, args: argparse.Namespace) -> RunResult:
    """The same model, starting from minigrad's initial weights, trained in PyTorch with
    its own DataLoader (its own shuffling), Adam and CosineAnnealingLR, on the CPU."""
    import torch  # deferred: the comparison is optional

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    model = build_model(torch)
    model.load_state_dict({name: torch.from_numpy(w) for name, w in initial_weights.items()})
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(data.train_images),
                                             torch.from_numpy(data.train_labels))
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                                         generator=torch.Generator().manual_seed(args.seed))
    started = time.perf_counter()
    for _ in range(args.epochs):
        model.train()
        for images, labels in loader:
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
    seconds = time.perf_counter() - started
    model.eval()
    with torch.no_grad():
        predicted = model(torch.from_numpy(data.test_images)).argmax(1).numpy()
    threads = torch.get_num_threads()
    name = (f"PyTorch {torch.__version__.split('+')[0]} ({threads} thread"
            f"{'s' if threads > 1 else ''})")
    return RunResult(name, seconds, float(np.mean(predicted == data.test_labels)), args.epochs)


def print_table(results: list[RunResult]) -> None:
    print("| framework | training s | held-out accuracy |")
    print("|---|---|---|")
    for result in results:
        print(f"| {result.framework} | {result.seconds:.1f} | {result.accuracy:.2%} |")


if __name__ == "__main__":
    keep_freed_memory()  # a choice for the whole process: train/heap.py
    sys.exit(main())
