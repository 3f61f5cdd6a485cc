"""Join: ranks whose inputs run out early keep the others company until all are done
(PyTorch's torch.distributed.algorithms.join).

With uneven inputs (different numbers of batches per rank) a rank that has finished its
batches stops calling the collectives the others still wait in. Inside `with Join([...])`
(or `with ddp_model.join():`) a rank whose loop has ended *joins*: in `__exit__` it
repeatedly counts the ranks that have not joined yet (an all-reduce that every
non-joined rank matches from `notify_join_context`, called at the start of each of its
iterations) and, while there are any, runs each joinable's `JoinHook.main_hook()`, which
issues the collectives of one iteration with neutral values (DistributedDataParallel:
zero gradients). When the count reaches zero every rank runs `post_hook(is_last_joiner)`
(DistributedDataParallel: copy the model of the last rank to join to all ranks).

With `throw_on_early_termination=True` every rank raises instead once one rank has run
out: the joined rank "Rank r exhausted all inputs.", the others "Detected at least one
rank that exhausted inputs. ...", so the program can decide what to do.

Differences from PyTorch: the count travels over MPI whatever the device (so a Joinable
needs no `join_device`), `notify_join_context` returns the number of ranks that have not
joined instead of a work handle, and leaving the context disables it again.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np

from minigrad.distributed.reduce_op import ReduceOp


class JoinHook:
    """What a Joinable does for a rank that has joined: `main_hook()` once for every
    iteration the others still run, `post_hook(is_last_joiner)` once all have joined."""

    def main_hook(self) -> None:
        """Issue this joinable's collectives of one iteration, matching the non-joined
        ranks'."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run after every rank has joined; `is_last_joiner` is True on the ranks that
        ran out last."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool


_DISABLED = _JoinConfig(enable=False, throw_on_early_termination=False,
                        is_first_joinable=False)


class Joinable(ABC):
    """A class whose per-iteration collectives a joined rank can shadow: it calls
    `Joinable.__init__(self)`, calls `Join.notify_join_context(self)` at the start of each
    iteration, and defines `join_hook(**kwargs)` and `join_process_group`."""

    def __init__(self) -> None:
        self._join_config = _DISABLED

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The JoinHook of this object; `kwargs` are the extra arguments given to Join."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group its collectives run in."""


class Join:
    """The context manager (see the module's docstring): `joinables` in the order their
    hooks run; `enable=False` turns it off (inputs known to be even); extra keyword
    arguments go to each `join_hook()`."""

    def __init__(self, joinables: list[Joinable], enable: bool = True,
                 throw_on_early_termination: bool = False, **kwargs):
        if not joinables:
            raise ValueError("Join: the join context manager requires at least one joinable")
        self._joinables = list(joinables)
        groups = {id(joinable.join_process_group) for joinable in self._joinables}
        if len(groups) > 1:
            raise ValueError("Join: the joinables use different process groups; a join "
                             "context manager works in one")
        self._group = self._joinables[0].join_process_group
        self._hooks = [joinable.join_hook(**kwargs) for joinable in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        for index, joinable in enumerate(self._joinables):
            joinable._join_config = _JoinConfig(enable, throw_on_early_termination,
                                                is_first_joinable=index == 0)

    def __enter__(self) -> Join:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        """This rank's inputs have run out: shadow the others until all have joined."""
        try:
            if not self._enable or exc_type is not None:
                return  # an exception goes on as it is
            is_last_joiner = True
            while _ranks_not_joined(self._group, joined=True):
                if self._throw_on_early_termination:
                    raise RuntimeError(f"Rank {self._group.rank} exhausted all inputs.")
                for hook in self._hooks:
                    hook.main_hook()
                is_last_joiner = False
            for hook in self._hooks:
                hook.post_hook(is_last_joiner)
        finally:
            for joinable in self._joinables:
                joinable._join_config = _DISABLED

    @staticmethod
    def notify_join_context(joinable: Joinable) -> int | None:
        """Tell the joined ranks that this one has not joined; call it at the start of
        every iteration. Returns the number of ranks that have not joined (None unless
        `joinable` is the first of an enabled join context, which alone communicates);
        with throw_on_early_termination, raises once a rank has joined."""
        config = joinable._join_config
        if not (config.enable and config.is_first_joinable):
            return None
        group = joinable.join_process_group
        not_joined = _ranks_not_joined(group, joined=False)
        if config.throw_on_early_termination and not_joined < group.size:
            raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                               "across all ranks.")
        return not_joined


def _ranks_not_joined(group, joined: bool) -> int:
    """How many ranks have not joined: every rank adds 0 if it has joined, else 1."""
    count = np.array([0 if joined else 1], dtype=np.int64)
    group.mpi.all_reduce(count, ReduceOp.SUM, "Join (counting the ranks not joined)").wait()
    return int(count[0])
