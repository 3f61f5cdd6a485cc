"""Data-parallel training of toy_translate: `mpiexec -n N python -m train.toy_translate
--distributed` (one GPU per rank with --device gpu).

Every rank builds the same model and walks the one-process batch stream with a global
batch of batch_size x N pairs, of which it takes every N-th pair, starting at its rank (a
global batch shorter than a multiple of N is padded by repeating its first pairs, as
DistributedSampler pads an epoch). DistributedDataParallel averages the gradients, so
every rank takes the same optimizer step on the same learning-rate schedule. Every rank
measures its share of the validation loss; rank 0 alone prints, shows the progress bar,
logs, scores the test set and writes files; the other ranks' standard output is
silenced. Dropout: rank 0 continues the run's generator (the one the
checkpoint saves); rank r > 0 reseeds from (seed, rank, step) before each step, so that a
resumed run repeats an uninterrupted one on every rank.

An error must end the whole job: a rank that stopped alone would leave the others waiting
for it in their next collective forever. So what can fail is decided by all ranks
together where they can meet: the set-up runs on every rank and they agree on its outcome
(`settle`), and in the training loop the losses and stop requests are compared across
ranks (train/loop.py). Any other error is one rank's: it prints its line and ends every
rank with MPI_Abort (`abort`).
"""
import argparse
import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NoReturn, TypeVar

import numpy as np

import minigrad as mg
import minigrad.distributed as dist
from minigrad.distributed.job_abort import abort_job
from minigrad.nn.parallel import DistributedDataParallel
from train.loop import Batch, IdPair, batch_stream
from train.vocab import PAD_ID


@dataclass(frozen=True)
class RankShard:
    """This process's place in a data-parallel run."""

    rank: int
    world_size: int

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that prints, logs, evaluates and saves."""
        return self.rank == 0

    def wrap(self, model) -> DistributedDataParallel:
        """The model as trained by this rank (its buffers, the positional tables, never
        change, so they are not re-sent before every forward)."""
        return DistributedDataParallel(model, broadcast_buffers=False)

    def batches(self, pairs: Sequence[IdPair], batch_size: int, seed: int,
                start_step: int) -> Iterator[Batch]:
        """This rank's share of the global batches of steps start_step + 1, ...; before
        each, ranks other than 0 reseed their dropout generator for that step."""
        step = start_step
        for src, tgt in batch_stream(pairs, batch_size * self.world_size, seed, start_step):
            step += 1
            if self.rank:
                mg.manual_seed(dropout_seed(seed, self.rank, step))
            rows = share_of_rows(len(src), self.rank, self.world_size)
            yield without_padding_columns(src[rows]), without_padding_columns(tgt[rows])

    def gather(self, value: float) -> list[float]:
        """Every rank's `value`, in rank order."""
        mine = mg.tensor([value], dtype=mg.float64)
        everyone = [mg.zeros(1, dtype=mg.float64) for _ in range(self.world_size)]
        dist.all_gather(everyone, mine)
        return [tensor.item() for tensor in everyone]

    def largest(self, value: int) -> int:
        """The largest of the ranks' `value`s."""
        agreed = mg.tensor([value], dtype=mg.int64)
        dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
        return int(agreed.item())

    def sum_over_ranks(self, values: Sequence[float]) -> list[float]:
        """The elementwise sums of the ranks' `values` (float64)."""
        total = mg.tensor(list(values), dtype=mg.float64)
        dist.all_reduce(total)
        return total.tolist()


def share_of_rows(rows: int, rank: int, world_size: int) -> np.ndarray:
    """The rows of a global batch that `rank` trains on: every world_size-th one from
    `rank`, after the batch is padded to a multiple of world_size by repeating its rows."""
    padded = np.resize(np.arange(rows), -(-rows // world_size) * world_size)
    return padded[rank::world_size]


def without_padding_columns(batch: np.ndarray) -> np.ndarray:
    """The batch cut after its last column that holds a token: a share of a global batch
    needs no room for the global batch's longest sentence."""
    used = np.flatnonzero((batch != PAD_ID).any(axis=0))
    return batch[:, :used[-1] + 1] if used.size else batch


def dropout_seed(seed: int, rank: int, step: int) -> int:
    return int(np.random.SeedSequence([seed, rank, step]).generate_state(1)[0])


def join(args: argparse.Namespace) -> RankShard:
    """Join the job mpiexec started: one process group ("nccl" for --device gpu), the
    other ranks' output silenced, and every rank checked to run with rank 0's flags."""
    dist.init_process_group("nccl" if args.device == "gpu" else "mpi")
    shard = RankShard(dist.get_rank(), dist.get_world_size())
    if not shard.is_main:
        sys.stdout = open(os.devnull, "w")  # for the rest of the process
    flags = [None] * shard.world_size
    # the flags as given (args.config is derived from them)
    given = {key: value for key, value in vars(args).items() if key != "config"}
    dist.all_gather_object(flags, given)
    for rank, theirs in enumerate(flags):
        differences = [f"--{key.replace('_', '-')} {value!r} (rank 0: {flags[0][key]!r})"
                       for key, value in theirs.items() if value != flags[0][key]]
        if differences:
            raise FlagMismatch(f"rank {rank} was started with other flags than rank 0: "
                               + ", ".join(differences), shard)
    return shard


class FlagMismatch(ValueError):
    """The ranks of a distributed run were not all given the same flags (raised on every
    rank; `shard` says which rank this process is)."""

    def __init__(self, message: str, shard: RankShard):
        super().__init__(message)
        self.shard = shard


class RankFailed(Exception):
    """A part of the run that every rank ran failed on at least one of them (raised on
    every rank): `status` is the exit status of the first rank that failed, `text` what it
    has to say (empty when it was rank 0, which printed its own)."""

    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status, self.text = status, text


Part = TypeVar("Part")


def settle(shard: RankShard | None, part: Callable[[], Part],
           describe: Callable[[BaseException], tuple[int, str | None]]) -> Part:
    """Run `part` on every rank and return its value, or raise RankFailed on every rank
    when it failed on any. `describe(exc)` gives an error's exit status and line (None if
    it was printed already), or raises it again when it is a bug (whose traceback then
    aborts the job). Ranks other than 0 print nothing meanwhile: what they would print
    is shown by rank 0 if they fail first, so that a failure of every rank is one line.
    Without `shard` (one process) this is part()."""
    if shard is None:
        return part()
    captured = io.StringIO()
    quiet = contextlib.nullcontext() if shard.is_main else contextlib.redirect_stderr(captured)
    value, outcome = None, None
    try:
        with quiet:
            value = part()
    except BaseException as exc:
        status, line = describe(exc)
        shown = captured.getvalue() + (f"{line}\n" if line else "")
        if shard.is_main:
            sys.stderr.write(shown)
            shown = ""
        outcome = (status, shown)
    else:
        sys.stderr.write(captured.getvalue())  # warnings and the like, as they came
    outcomes = [None] * shard.world_size
    dist.all_gather_object(outcomes, outcome)
    failed = [outcome for outcome in outcomes if outcome is not None]
    if failed:
        raise RankFailed(*failed[0])
    return value


def abort(status: int) -> NoReturn:
    """End every rank of the job now with `status` (MPI_Abort on the group's MPI
    communicator, COMM_WORLD): the way out for an error on one rank while the others may
    be waiting for it in a collective."""
    from mpi4py import MPI  # only a distributed run gets here, and it has mpi4py

    abort_job(MPI.COMM_WORLD, status)
    raise SystemExit(status)  # not reached: Abort ends this process too
