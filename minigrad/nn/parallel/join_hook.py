"""DistributedDataParallel with uneven inputs: what a rank that ran out of batches does
inside `with model.join():` (see minigrad.distributed.algorithms.join).

Every iteration of the ranks still training starts with two small all-reduces: Join's
count of the ranks not joined, then `join_round`, which tells the joined ranks whether
this iteration's backward synchronizes gradients (not under no_sync()), whether its
forward first broadcasts the buffers (with broadcast_buffers, after a synced forward) and
from which rank (the highest-numbered rank still training, as PyTorch: rank 0 may have
joined with stale ones). A joined rank then matches that broadcast and, when the backward
syncs, every all-reduce of the reducer with zero gradients. Gradients are
divided by the world size the job started with (`divide_by_initial_world_size=True`, so
every sample weighs the same) or by the number of ranks still training. When all have
joined, the model of the highest-numbered rank among the last to join is copied to all.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from minigrad.distributed.algorithms.join import JoinHook
from minigrad.distributed.reduce_op import ReduceOp


class DDPJoinHook(JoinHook):
    """The JoinHook of a DistributedDataParallel model."""

    def __init__(self, ddp, divide_by_initial_world_size: bool):
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        """Shadow one forward and backward of the ranks still training."""
        ddp = self.ddp
        iteration = join_round(ddp.group, training=False, sync=False, sync_buffers=False)
        if iteration.sync_buffers:
            ddp._broadcast_buffers_from(iteration.buffer_source)
        # the next forward after the join sends the buffers if the others' last one would
        ddp.require_forward_param_sync = iteration.sync
        if iteration.sync:
            ddp.reducer.shadow_backward()

    def post_hook(self, is_last_joiner: bool) -> None:
        """Give every rank the model of the last rank to join."""
        (source,) = highest_over_ranks(self.ddp.group,
                                       [self.ddp.group.rank if is_last_joiner else -1],
                                       "DistributedDataParallel.join (final model)")
        self.ddp._broadcast_model_from(source)


class JoinRound(NamedTuple):
    """What the ranks still training do in this iteration."""

    sync: bool  # their backward all-reduces the gradients
    sync_buffers: bool  # their forward first broadcasts the buffers
    buffer_source: int  # from this rank: the highest-numbered of them


def join_round(group, training: bool, sync: bool, sync_buffers: bool) -> JoinRound:
    """The JoinRound of this iteration, from every rank's flags (a joined rank, not
    `training`, passes False for both)."""
    values = highest_over_ranks(group, [int(sync), int(sync_buffers),
                                        group.rank if training else -1],
                                "DistributedDataParallel.join (iteration)")
    return JoinRound(bool(values[0]), bool(values[1]), values[2])


def highest_over_ranks(group, values: list[int], collective: str) -> list[int]:
    """The elementwise maximum of every rank's `values`."""
    array = np.array(values, dtype=np.int64)
    group.mpi.all_reduce(array, ReduceOp.MAX, collective).wait()
    return [int(value) for value in array]
