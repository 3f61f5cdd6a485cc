"""Training: length-bucketed batches whose order depends only on (seed, epoch), and the
loop that runs optimizer steps, logs losses and checks the validation loss.

Because the batch order of every epoch is a pure function of the seed and the epoch,
a resumed run only needs the step count (plus the model, optimizer, scheduler and
dropout RNG state) to see exactly the batches an uninterrupted run would.
"""

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

import minigrad as mg
import minigrad.nn.functional as F
from train.data import pad_sequences
from train.interrupt import StopSignals
from train.vocab import BOS_ID, EOS_ID, PAD_ID

IdPair = tuple[Sequence[int], Sequence[int]]
Batch = tuple[np.ndarray, np.ndarray]
# batches are cut from windows of this many batches sorted by source length
_BUCKET_WINDOW = 16


def make_batch(pairs: Sequence[IdPair]) -> Batch:
    """(src, tgt) int64 arrays padded with <pad>; the target is wrapped as <s> ... </s>."""
    sources = [list(src) for src, _ in pairs]
    targets = [[BOS_ID, *tgt, EOS_ID] for _, tgt in pairs]
    return pad_sequences(sources), pad_sequences(targets)


def epoch_batches(pairs: Sequence[IdPair], batch_size: int, seed: int, epoch: int) -> list[Batch]:
    """The batches of one epoch, in training order, each of similar-length sentences.

    The pairs are shuffled, cut into windows of _BUCKET_WINDOW batches, sorted by length
    inside each window (so little of a batch is padding) and the batches shuffled again.
    """
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(pairs))
    window = batch_size * _BUCKET_WINDOW
    groups = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window],
                       key=lambda index: (len(pairs[index][0]), len(pairs[index][1])))
        groups += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [make_batch([pairs[index] for index in groups[g]])
            for g in rng.permutation(len(groups))]


def batch_stream(pairs: Sequence[IdPair], batch_size: int, seed: int,
                 start_step: int) -> Iterator[Batch]:
    """Batches for steps start_step + 1, start_step + 2, ... across epochs, forever."""
    per_epoch = -(-len(pairs) // batch_size)
    epoch, skip = divmod(start_step, per_epoch)
    while True:
        yield from epoch_batches(pairs, batch_size, seed, epoch)[skip:]
        epoch, skip = epoch + 1, 0


def batch_loss(model, src: np.ndarray, tgt: np.ndarray, device: str,
               label_smoothing: float) -> mg.Tensor:
    """Mean label-smoothed cross entropy of predicting tgt[:, 1:] from tgt[:, :-1]."""
    logits = model(mg.tensor(src, device=device), mg.tensor(tgt[:, :-1], device=device))
    target = mg.tensor(tgt[:, 1:].reshape(-1), device=device)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target, ignore_index=PAD_ID,
                           label_smoothing=label_smoothing)


def validation_loss(model, pairs: Sequence[IdPair], device: str, batch_size: int = 250,
                    shard=None, amp: bool = False) -> float:
    """Plain cross entropy per target token on `pairs`, in eval mode (no dropout); with
    amp in mixed precision (mg.autocast), as training computes it.

    With `shard` every rank measures its share of the pairs (every world_size-th one) and
    the ranks add up their sums, so all of them get the same loss and take the same
    decision when it is not finite."""
    if shard is not None:
        pairs = pairs[shard.rank :: shard.world_size]
    model.eval()
    total, tokens = 0.0, 0
    with mg.no_grad():
        for start in range(0, len(pairs), batch_size):
            src, tgt = make_batch(pairs[start : start + batch_size])
            count = int((tgt[:, 1:] != PAD_ID).sum())
            with mg.autocast(device, enabled=amp):
                total += batch_loss(model, src, tgt, device, 0.0).item() * count
            tokens += count
    model.train()
    if shard is not None:
        total, tokens = shard.sum_over_ranks([total, tokens])
    return total / tokens


@dataclass
class TrainState:
    """What a training run carries between steps and into a checkpoint."""

    model: object
    optimizer: object
    scheduler: object
    step: int = 0
    losses: list[float] = field(default_factory=list)
    val_losses: dict[int, float] = field(default_factory=dict)  # by step
    # loss scaling of a mixed-precision (--amp) run; a disabled scaler changes nothing
    scaler: mg.amp.GradScaler = field(default_factory=lambda: mg.amp.GradScaler(enabled=False))


def train(state: TrainState, train_pairs: Sequence[IdPair], val_pairs: Sequence[IdPair], *,
          steps: int, batch_size: int, seed: int, label_smoothing: float, device: str,
          eval_every: int, log: Callable[[dict], None], shard=None,
          stop: StopSignals | None = None) -> int:
    """Run optimizer steps until state.step == steps, logging every step's loss and lr
    and, every eval_every steps and at the end, the validation loss.

    `stop` (see train/interrupt.py) is looked at after every step, where the state is
    whole: a signal it recorded ends the loop there. Returns that signal's number, or 0
    when the run reached `steps`. LossNotFinite before the update of a step whose loss is
    NaN or infinite.

    With `shard` (a train.distributed.RankShard) this is one rank of a data-parallel run:
    it trains the DDP-wrapped model on its share of each global batch, and rank 0 alone
    shows progress and logs. Every decision to stop is taken by all ranks together: each
    step's losses are compared across ranks before the update, the validation loss is
    measured by all of them, and a signal that reached any rank stops them all after the
    same step.

    With state.scaler enabled (--amp) the forward passes run in mg.autocast on `device`
    and the loss is scaled for backward (see minigrad/amp)."""
    amp = state.scaler.is_enabled()
    state.model.train()
    if shard is None:
        model, main = state.model, True
        batches = batch_stream(train_pairs, batch_size, seed, state.step)
    else:
        model, main = shard.wrap(state.model), shard.is_main
        batches = shard.batches(train_pairs, batch_size, seed, state.step)
    bar = tqdm(total=steps, initial=state.step, desc="train", unit="step", dynamic_ncols=True,
               disable=not main)
    tokens, started = 0, time.perf_counter()
    try:
        while state.step < steps:
            src, tgt = next(batches)
            lr = state.scheduler.get_last_lr()[0]
            with mg.autocast(device, enabled=amp):  # float16 products, a float32 loss
                loss = batch_loss(model, src, tgt, device, label_smoothing)
            loss_value = loss.item()
            # before the update, so that the state stays good
            _check_finite("training", _every_rank(loss_value, shard), state.step + 1)
            state.optimizer.zero_grad()
            # with amp: gradients of the scaled loss, unscaled before the step, which is
            # skipped (and the scale lowered) if any overflowed in float16
            state.scaler.scale(loss).backward()
            state.scaler.step(state.optimizer)
            state.scaler.update()
            state.scheduler.step()
            state.step += 1
            state.losses.append(loss_value)
            tokens += int((src != PAD_ID).sum() + (tgt != PAD_ID).sum())
            record = {"step": state.step, "loss": loss_value, "lr": lr}
            if state.step % eval_every == 0 or state.step == steps:
                record["val_loss"] = validation_loss(state.model, val_pairs, device,
                                                     shard=shard, amp=amp)
                _check_finite("validation", [record["val_loss"]], state.step)
                state.val_losses[state.step] = record["val_loss"]
            if main:
                if "val_loss" in record:
                    bar.write(f"step {state.step}: validation loss {record['val_loss']:.4f}")
                log(record)
            bar.set_postfix(loss=f"{loss_value:.3f}", lr=f"{lr:.2e}",
                            tok_s=f"{tokens / (time.perf_counter() - started):.0f}")
            bar.update()
            signal_number = _stop_requested(stop, shard)
            if signal_number:
                return signal_number
    except BaseException:
        bar.leave = False  # the error message, not a half-full bar, ends the output
        raise
    finally:
        bar.close()
    return 0


def _every_rank(value: float, shard) -> list[float]:
    """[value], or every rank's value in rank order in a data-parallel run."""
    return [value] if shard is None else shard.gather(value)


def _check_finite(kind: str, losses: list[float], step: int) -> None:
    """LossNotFinite for the first of `losses` (one per rank, or the job's one) that is
    NaN or infinite, naming its rank when there are several."""
    for rank, loss in enumerate(losses):
        if not math.isfinite(loss):
            raise LossNotFinite(kind, loss, step, rank if len(losses) > 1 else None)


def _stop_requested(stop: StopSignals | None, shard) -> int:
    """The signal that asked this process, or in a data-parallel run any rank, to stop
    (the largest number if several did), else 0."""
    requested = 0 if stop is None else stop.requested
    return requested if shard is None else shard.largest(requested)


class LossNotFinite(ArithmeticError):
    """The loss became NaN or infinite at `step`; training cannot go on from there."""

    def __init__(self, kind: str, value: float, step: int, rank: int | None = None) -> None:
        where = "" if rank is None else f" on rank {rank}"
        super().__init__(f"the {kind} loss is {value} at step {step}{where}")
        self.step = step
