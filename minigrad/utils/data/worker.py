"""The worker side of `DataLoader(num_workers=N)`: the loop each worker process runs,
`get_worker_info()`, and what travels back to the main process.

A worker is seeded as PyTorch seeds one: seed = base_seed + worker_id for Python's
`random` and minigrad's generators, and NumPy's global generator from (worker_id,
base_seed); the DataLoader draws base_seed from its generator when an epoch starts.
It then runs worker_init_fn(worker_id) and answers tasks (epoch, number, indices) from
its index queue with (epoch, number, result) on the shared result queue, in the order
the tasks came. A result is a batch, a `WorkerError` (an exception raised fetching it),
or, for an IterableDataset, `StreamEnd` once its copy of the stream is spent. Batches
cross as NumPy arrays: each tensor is sent as its array and device (`TensorPayload`) and
built again in the main process. Results are pickled in the worker, so one that cannot
be is reported as that worker's error rather than lost.
"""
from __future__ import annotations

import collections.abc
import os
import pickle
import queue
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from minigrad import random as global_random
from minigrad.creation import from_numpy
from minigrad.tensor import Tensor
from minigrad.utils.data.fetch import FetchSpec

PARENT_CHECK_INTERVAL = 1.0  # seconds an idle worker waits before checking its parent lives


@dataclass(frozen=True)
class WorkerInfo:
    """What `get_worker_info()` tells code running in a worker (PyTorch's fields):
    `dataset` is the worker's own copy, `seed` the one its generators were seeded with."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None  # set once in each worker process, never in the main


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its `WorkerInfo` (an IterableDataset's `__iter__`
    uses it to yield only its share of the stream); in the main process, None."""
    return _worker_info


@dataclass(frozen=True)
class WorkerJob:
    """What every worker of one DataLoader iterator is given."""

    fetch: FetchSpec
    num_workers: int
    base_seed: int
    worker_init_fn: Callable | None


@dataclass(frozen=True)
class StreamEnd:
    """The worker's copy of the IterableDataset has no more batches this epoch."""

    worker_id: int


class WorkerError:
    """An exception raised in a worker, carried as its type and formatted traceback (the
    exception itself may not pickle); `reraise()` raises it again in the main process."""

    def __init__(self, worker_id: int, error: BaseException):
        self.worker_id = worker_id
        self.type_name = type(error).__name__
        # raised again as its own type where the main process can import that type
        self.exc_type = type(error) if _pickles(type(error)) else RuntimeError
        self.original = "".join(traceback.format_exception(error))

    def reraise(self):
        message = (f"Caught {self.type_name} in DataLoader worker process "
                   f"{self.worker_id}.\nOriginal {self.original}")
        try:
            error = self.exc_type(message)
        except Exception:  # a type whose constructor takes other arguments
            error = RuntimeError(message)
        raise error


@dataclass(frozen=True)
class TensorPayload:
    """A tensor on its way to the main process: its array (on the host) and device."""

    array: np.ndarray
    device: str


def pack(data):
    """`data` with each tensor replaced by its TensorPayload (inside dicts, lists, tuples
    and namedtuples too)."""
    if isinstance(data, Tensor):
        return TensorPayload(data.numpy(), str(data.device))
    return _map_children(pack, data)


def unpack(data):
    """The inverse of `pack`: each TensorPayload built again as a tensor on its device."""
    if isinstance(data, TensorPayload):
        tensor = from_numpy(data.array)  # the unpickled array is this tensor's alone
        return tensor if data.device == "cpu" else tensor.to(data.device)
    return _map_children(unpack, data)


def _map_children(function, data):
    if isinstance(data, collections.abc.Mapping):
        mapped = {key: function(value) for key, value in data.items()}
        return mapped if type(data) is dict else _rebuilt(data, mapped)
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(function(value) for value in data))
    if isinstance(data, (list, tuple)):
        return type(data)(function(value) for value in data)
    return data


def _rebuilt(original, values: dict):
    try:
        return type(original)(values)
    except TypeError:  # a mapping type that cannot be built from a dict
        return values


def worker_loop(job: WorkerJob, worker_id: int, index_queue, result_queue) -> None:
    """The body of worker process `worker_id`: seed, run worker_init_fn, then answer
    tasks until a None task (or the main process's death) ends it."""
    global _worker_info
    try:
        seed = job.base_seed + worker_id
        random.seed(seed)
        global_random.manual_seed(seed)
        np.random.seed(np.random.SeedSequence([worker_id, job.base_seed]).generate_state(4))
        _worker_info = WorkerInfo(worker_id, job.num_workers, seed, job.fetch.dataset)
        init_error = None
        try:
            if job.worker_init_fn is not None:
                job.worker_init_fn(worker_id)
        except Exception as error:
            init_error = WorkerError(worker_id, error)  # the answer to every task
        _answer_tasks(job.fetch, worker_id, index_queue, result_queue, init_error)
    except KeyboardInterrupt:
        pass  # Ctrl-C reaches the main process too, which shuts the workers down
    # leave without waiting for unread results: the main process no longer wants them
    result_queue.cancel_join_thread()


def _answer_tasks(spec: FetchSpec, worker_id: int, index_queue, result_queue,
                  init_error: WorkerError | None) -> None:
    parent = os.getppid()
    fetcher, epoch, stream_ended = None, None, False
    while (task := _next_task(index_queue, parent)) is not None:
        task_epoch, number, indices = task
        if task_epoch != epoch:  # a new epoch: a new pass over the dataset
            fetcher, epoch, stream_ended = None, task_epoch, False
        if stream_ended:
            continue  # the main process expects nothing more from this worker this epoch
        if init_error is not None:
            result = init_error
        else:
            try:
                if fetcher is None:
                    fetcher = spec.fetcher()
                result = pack(fetcher.fetch(indices))
            except StopIteration as error:
                stream_ended = spec.is_stream
                result = StreamEnd(worker_id) if stream_ended else WorkerError(worker_id, error)
            except Exception as error:
                result = WorkerError(worker_id, error)
        result_queue.put(_pickled((task_epoch, number, result), worker_id))


def _next_task(index_queue, parent: int):
    """The next task, or None when told to stop or when the main process is gone."""
    while True:
        try:
            return index_queue.get(timeout=PARENT_CHECK_INTERVAL)
        except queue.Empty:
            if os.getppid() != parent:  # orphaned: the main process died without telling
                return None


def _pickled(message: tuple, worker_id: int) -> bytes:
    try:
        return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        epoch, number, _ = message
        failure = RuntimeError(f"DataLoader worker process {worker_id} could not send its "
                               f"batch to the main process: {error!r}")
        return pickle.dumps((epoch, number, WorkerError(worker_id, failure)))


def _pickles(value) -> bool:
    try:
        pickle.dumps(value)
        return True
    except Exception:
        return False
