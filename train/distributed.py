"""Data-parallel training of toy_translate: `mpiexec -n N python -m train.toy_translate
--distributed` (one GPU per rank with --device gpu).

Every rank builds the same model and walks the one-process batch stream with a global
batch of batch_size x N pairs, of which it takes every N-th pair, starting at its rank (a
global batch shorter than a multiple of N is padded by repeating its first pairs, as
DistributedSampler pads an epoch). DistributedDataParallel averages the gradients, so
every rank takes the same optimizer step on the same learning-rate schedule. Rank 0 alone
prints, shows the progress bar, evaluates, logs and writes files; the other ranks'
standard output is silenced. Dropout: rank 0 continues the run's generator (the one the
checkpoint saves); rank r > 0 reseeds from (seed, rank, step) before each step, so that a
resumed run repeats an uninterrupted one on every rank.
"""
import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

import minigrad as mg
import minigrad.distributed as dist
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
    dist.all_gather_object(flags, vars(args))
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
