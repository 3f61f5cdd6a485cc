"""DataLoader(num_workers=N): the batches of num_workers=0, in its order, from worker
processes (map-style datasets shuffled by a generator; iterable ones sharded by
get_worker_info); seeding, worker_init_fn, persistent workers, errors raised in the main
process naming the worker, a dead worker and a timeout detected, and no process left
behind. Workers start by fork (the Linux default) except in the one spawn test."""
from __future__ import annotations

import gc
import math
import multiprocessing
import os
import random
import time

import numpy as np
import pytest

import minigrad as mg
from minigrad.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="the worker tests start workers by fork")
FORK = "fork"


def _plain(batch):
    """A batch as nested lists, for comparing batches of two loaders."""
    if isinstance(batch, mg.Tensor):
        return (str(batch.dtype), batch.tolist())
    if isinstance(batch, dict):
        return {key: _plain(value) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_plain(item) for item in batch]
    return batch


def _epochs(loader, count: int = 1) -> list:
    return [[_plain(batch) for batch in loader] for _ in range(count)]


class Records(Dataset):
    """Sample i: a dict of a float32 row, an int label and a name."""

    def __init__(self, size: int = 23):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        row = np.arange(3, dtype=np.float32) + index
        return {"row": row, "label": index % 4, "name": f"item {index}"}


@pytest.mark.parametrize("num_workers", [1, 2, 3])
@pytest.mark.parametrize("batch_size, drop_last", [(4, False), (4, True), (None, False)])
def test_workers_give_the_batches_of_one_process_in_its_order(num_workers, batch_size,
                                                              drop_last):
    """With shuffle and a generator, over two epochs (the generator moves on)."""
    def loader(workers):
        return DataLoader(Records(), batch_size=batch_size, shuffle=True, drop_last=drop_last,
                          generator=np.random.default_rng(7), num_workers=workers,
                          multiprocessing_context=FORK if workers else None)

    expected = _epochs(loader(0), 2)
    assert expected[0] != expected[1]
    assert _epochs(loader(num_workers), 2) == expected


def test_tensor_batches_are_built_in_the_main_process_with_their_dtypes():
    data = TensorDataset(mg.arange(24.0).reshape(12, 2), mg.arange(12),
                         mg.tensor(np.arange(12) % 2 == 0))
    loader = DataLoader(data, batch_size=5, num_workers=2, multiprocessing_context=FORK)
    batches = list(loader)
    assert [tuple(t.dtype for t in batch) for batch in batches] == \
           [(mg.float32, mg.int64, mg.bool)] * 3
    assert _epochs(loader) == _epochs(DataLoader(data, batch_size=5))


def test_the_global_seed_orders_batches_alike_with_and_without_workers():
    def epoch(workers):
        mg.manual_seed(3)
        loader = DataLoader(Records(), batch_size=3, shuffle=True, num_workers=workers)
        return _epochs(loader), mg.rand(2).tolist()  # the global generator moved alike

    assert epoch(2) == epoch(0)


class ShardedStream(IterableDataset):
    """0..size-1 in batches of `batch`: worker k of n yields the batches k, k + n, ...,
    so that their batches, taken in turn, are the stream's."""

    def __init__(self, size: int, batch: int):
        self.size, self.batch = size, batch

    def __iter__(self):
        info = get_worker_info()
        first, step = (0, 1) if info is None else (info.id, info.num_workers)
        for number in range(first, math.ceil(self.size / self.batch), step):
            start = number * self.batch
            yield from range(start, min(start + self.batch, self.size))


@pytest.mark.parametrize("num_workers", [2, 3])
@pytest.mark.parametrize("size", [23, 24])
def test_an_iterable_dataset_sharded_by_worker_info_gives_the_same_batches(num_workers,
                                                                           size):
    stream = ShardedStream(size, 4)
    expected = _epochs(DataLoader(stream, batch_size=4))
    assert _epochs(DataLoader(stream, batch_size=4, num_workers=num_workers,
                              multiprocessing_context=FORK)) == expected


class Unsharded(IterableDataset):
    def __iter__(self):
        return iter(range(6))


def test_an_iterable_dataset_without_sharding_is_read_whole_by_every_worker():
    loader = DataLoader(Unsharded(), batch_size=None, num_workers=2,
                        multiprocessing_context=FORK)
    assert sorted(loader) == sorted(list(range(6)) * 2)


class WhoLoads(Dataset):
    """Sample i: (i, the worker's id, the id its worker_init_fn saw, its seed, a draw
    from each of minigrad's, NumPy's and Python's global generators)."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        info = get_worker_info()
        return (index, info.id, os.environ.get("INIT_SAW"), info.seed,
                mg.rand(1).item(), np.random.rand(), random.random(), info.num_workers,
                type(info.dataset).__name__)


def _record_id(worker_id: int) -> None:
    os.environ["INIT_SAW"] = str(worker_id)


def test_each_worker_is_initialised_and_seeded_from_the_loaders_generator():
    def samples(seed):
        loader = DataLoader(WhoLoads(), batch_size=None, num_workers=2, generator=seed,
                            worker_init_fn=_record_id, multiprocessing_context=FORK)
        return list(loader)

    first = samples(11)
    assert [(s[0], s[1], s[2]) for s in first] == \
           [(i, i % 2, str(i % 2)) for i in range(8)]  # tasks go to the workers in turn
    seeds = {s[1]: s[3] for s in first}
    base_seed = np.random.default_rng(11).integers(0, 2**63 - 1)
    assert seeds == {0: base_seed, 1: base_seed + 1}
    assert all(s[7:] == [2, "WhoLoads"] for s in first)
    assert get_worker_info() is None  # in the main process
    draws = [s[4:7] for s in first]
    assert draws[0] != draws[1]  # the workers' generators differ ...
    assert samples(11) == first  # ... and follow the loader's seed
    assert samples(12) != first


class Pids(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, index):
        return os.getpid()


def _gone(pids) -> bool:
    """No process (a zombie neither) has these ids any more."""
    return not any(os.path.exists(f"/proc/{pid}") for pid in pids)


class FailsAt(Dataset):
    def __init__(self, bad_index: int, how: str):
        self.bad_index, self.how = bad_index, how

    def __len__(self):
        return 8

    def __getitem__(self, index):
        if index == self.bad_index:
            if self.how == "raise":
                raise ValueError(f"no sample {index}")
            if self.how == "exit":
                os._exit(3)
            time.sleep(1.5)
        return index, os.getpid()


def test_an_exception_in_a_worker_is_raised_in_the_main_process_naming_the_worker():
    loader = DataLoader(FailsAt(5, "raise"), batch_size=2, num_workers=2,
                        multiprocessing_context=FORK)
    iterator = iter(loader)
    assert [next(iterator)[0].tolist() for _ in range(2)] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process 0"
                                         r"(.|\n)*no sample 5"):
        next(iterator)  # batch 2, indices [4, 5], went to worker 0
    assert next(iterator)[0].tolist() == [6, 7]  # the other batches still come


def test_what_cannot_cross_to_the_main_process_is_reported_as_the_workers_error():
    class LocalError(Exception):  # a type pickle cannot name
        pass

    class Failing(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            raise LocalError(f"sample {index} is missing")

    loader = DataLoader(Failing(), batch_size=2, num_workers=1, multiprocessing_context=FORK)
    with pytest.raises(RuntimeError, match="Caught LocalError in DataLoader worker process "
                                           r"0(.|\n)*sample 0 is missing"):
        next(iter(loader))
    unsendable = DataLoader(Records(), batch_size=2, num_workers=1,
                            collate_fn=lambda samples: (lambda: samples),
                            multiprocessing_context=FORK)
    with pytest.raises(RuntimeError, match="DataLoader worker process 0 could not send its "
                                           "batch to the main process"):
        next(iter(unsendable))


def test_an_error_in_worker_init_fn_is_raised_in_the_main_process():
    def failing_init(worker_id):
        raise KeyError(f"worker {worker_id} lacks a resource")

    loader = DataLoader(Records(), batch_size=4, num_workers=2, worker_init_fn=failing_init,
                        multiprocessing_context=FORK)
    with pytest.raises(KeyError, match="in DataLoader worker process 0(.|\n)*lacks a "
                                       "resource"):
        next(iter(loader))


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_worker_that_dies_is_named_and_the_others_are_shut_down():
    # one task per worker ahead: index 4 goes to worker 0 after batch 2 is taken
    loader = DataLoader(FailsAt(4, "exit"), batch_size=1, num_workers=2, prefetch_factor=1,
                        multiprocessing_context=FORK)
    iterator = iter(loader)
    pids = {next(iterator)[1].item() for _ in range(2)}
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader worker 0 .pid [0-9]+. exited "
                                           "unexpectedly with exit code 3"):
        list(iterator)
    assert time.monotonic() - start < 5
    assert _gone(pids)


def test_a_batch_that_takes_longer_than_the_timeout_raises():
    loader = DataLoader(FailsAt(1, "sleep"), batch_size=1, num_workers=1, timeout=0.3,
                        multiprocessing_context=FORK)
    iterator = iter(loader)
    assert next(iterator)[0].tolist() == [0]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(iterator)
    assert time.monotonic() - start < 2


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_workers_are_reaped_after_an_epoch_and_when_an_iterator_is_dropped():
    loader = DataLoader(Pids(), batch_size=2, num_workers=2, multiprocessing_context=FORK)
    pids = {pid for batch in loader for pid in batch.tolist()}
    assert len(pids) == 2 and os.getpid() not in pids
    assert _gone(pids)
    iterator = iter(loader)
    pids = set(next(iterator).tolist()) | set(next(iterator).tolist())
    assert len(pids) == 2 and not _gone(pids)
    del iterator  # half way through the epoch
    gc.collect()
    assert _gone(pids)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_persistent_workers_serve_every_epoch_even_one_cut_short():
    loader = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True,
                        multiprocessing_context=FORK)
    first = [batch.tolist() for batch in loader]
    pids = {pid for batch in first for pid in batch}
    next(iter(loader))  # an epoch cut short leaves tasks in the queues
    assert [batch.tolist() for batch in loader] == first  # the same workers, in turn
    assert not _gone(pids)
    del loader
    gc.collect()
    assert _gone(pids)


def test_persistent_workers_give_the_batches_of_one_process_each_epoch():
    """Epochs with another order each, the second cut short after one batch: the
    batches of the first epoch still on their way are not taken for the third's."""
    def epochs(workers):
        loader = DataLoader(Records(), batch_size=2, shuffle=True, generator=2,
                            num_workers=workers, persistent_workers=workers > 0,
                            multiprocessing_context=FORK if workers else None)
        first = _epochs(loader)
        cut_short = _plain(next(iter(loader)))
        return first, cut_short, _epochs(loader, 2)

    assert epochs(2) == epochs(0)


def test_workers_start_by_spawn_too():
    data = TensorDataset(mg.arange(10.0))
    loader = DataLoader(data, batch_size=4, shuffle=True, generator=1, num_workers=1,
                        multiprocessing_context="spawn")
    assert _epochs(loader) == _epochs(DataLoader(data, batch_size=4, shuffle=True,
                                                 generator=1))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"num_workers": -1}, ValueError, "num_workers option should be non-negative"),
    ({"timeout": -1}, ValueError, "timeout option should be non-negative"),
    ({"timeout": 5}, ValueError, "timeout=5 bounds the wait for worker processes and needs "
                                 "num_workers > 0"),
    ({"prefetch_factor": 2}, ValueError, "prefetch_factor option could only be specified"),
    ({"num_workers": 2, "prefetch_factor": 0}, ValueError,
     "prefetch_factor option should be a positive integer, got 0"),
    ({"persistent_workers": True}, ValueError, "persistent_workers option needs "
                                               "num_workers > 0"),
    ({"multiprocessing_context": "fork"}, ValueError, "multiprocessing_context can only be "
                                                      "used with multi-process loading"),
    ({"num_workers": 1, "multiprocessing_context": "threads"}, ValueError,
     "multiprocessing_context option should specify a valid start method in"),
    ({"num_workers": 1, "multiprocessing_context": 3}, TypeError,
     "multiprocessing_context option should be a valid context object or a string"),
    ({"num_workers": 1, "worker_init_fn": "init"}, TypeError, "worker_init_fn must be "
                                                              "callable"),
])
def test_worker_options_are_checked_as_pytorch_checks_them(kwargs, error, message):
    with pytest.raises(error, match="DataLoader: " + message):
        DataLoader(Records(), **kwargs)


def test_pin_memory_is_accepted_and_changes_nothing():
    loader = DataLoader(Records(), batch_size=4, pin_memory=True, pin_memory_device="cuda")
    assert _epochs(loader) == _epochs(DataLoader(Records(), batch_size=4))


def test_minigrad_multiprocessing_is_the_standard_module_under_pytorchs_name():
    assert mg.multiprocessing.get_context is multiprocessing.get_context
    assert mg.multiprocessing.Process is multiprocessing.Process
    assert mg.multiprocessing.get_all_start_methods() == \
           multiprocessing.get_all_start_methods()
    assert "Queue" in dir(mg.multiprocessing)
    with pytest.raises(AttributeError, match="minigrad.multiprocessing"):
        mg.multiprocessing.share_memory_tensors  # noqa: B018
