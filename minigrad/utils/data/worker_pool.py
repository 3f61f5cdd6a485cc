"""The main side of `DataLoader(num_workers=N)`: an iterator that keeps N worker
processes busy and yields their batches in the order num_workers=0 would.

Tasks go to the workers in turn, prefetch_factor per worker ahead of what has been
yielded. For a map-style dataset a task is the next indices of the sampler, drawn here
in the main process; for an IterableDataset it is "your next batch", and each worker
batches its own copy of the stream until it sends StreamEnd. Results come back on one
queue in any order and are held until their turn. Each task carries its epoch, so what
an epoch cut short leaves in the queues is recognised and dropped when persistent
workers start the next one.

Nothing hangs: waiting for a result, the iterator checks every STATUS_CHECK_INTERVAL
seconds that no worker has died (and raises RuntimeError naming it if one has), and
gives up after `timeout` seconds when one is set. Workers are shut down and reaped when
the epoch ends (unless persistent), when a worker dies, or when the iterator is garbage
collected or the interpreter exits (a weakref.finalize, not __del__).
"""
from __future__ import annotations

import itertools
import pickle
import queue
import signal
import time
import weakref

from minigrad.utils.data.worker import StreamEnd, WorkerError, WorkerJob, unpack, worker_loop

STATUS_CHECK_INTERVAL = 0.5  # seconds between checks that the workers still live
SHUTDOWN_WAIT = 2.0  # seconds a worker has to leave before it is terminated
_NO_TASK = object()


class WorkerPoolIterator:
    """Batches of one DataLoader from `job.num_workers` worker processes (see the module
    docstring); `reset()` starts another epoch on the same workers."""

    def __init__(self, job: WorkerJob, index_sampler, context, prefetch_factor: int,
                 timeout: float, persistent: bool):
        self._is_stream = job.fetch.is_stream
        self._index_sampler = index_sampler
        self._prefetch_factor, self._timeout = prefetch_factor, timeout
        self._persistent = persistent
        self._results = context.Queue()
        self._index_queues, self._workers = [], []
        # registered first: if starting a worker fails (no processes or file descriptors
        # left), those already started are shut down
        self._shut_down = weakref.finalize(self, _shut_down, self._workers,
                                           self._index_queues, self._results)
        for worker_id in range(job.num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # never keep the main process from exiting
            worker = context.Process(target=worker_loop, daemon=True,
                                     args=(job, worker_id, index_queue, self._results))
            self._index_queues.append(index_queue)
            worker.start()
            self._workers.append(worker)
        self._epoch = -1
        self.reset()

    @property
    def closed(self) -> bool:
        return not self._shut_down.alive

    def reset(self) -> None:
        """Start a new epoch: a new pass over the sampler (or the streams)."""
        self._epoch += 1
        self._indices = None if self._is_stream else iter(self._index_sampler)
        self._active = [True] * len(self._workers)  # workers whose stream is not spent
        self._turns = itertools.cycle(range(len(self._workers)))
        self._sent = self._yielded = 0
        self._waiting = {}  # task number -> the worker it went to, until it is yielded
        self._early = {}  # task number -> its result, come before its turn
        for _ in range(self._prefetch_factor * len(self._workers)):
            self._send_task()

    def close(self) -> None:
        """Shut the workers down now (also done when the iterator is collected)."""
        self._shut_down()

    def __iter__(self):
        return self

    def __next__(self):
        if self.closed:  # by a dead worker, or by close()
            raise StopIteration
        while True:
            self._skip_tasks_of_spent_streams()
            if self._yielded == self._sent:
                if not self._persistent:
                    self.close()
                raise StopIteration
            if self._yielded in self._early:
                return self._deliver(self._early.pop(self._yielded))
            epoch, number, result = self._next_result()
            if epoch != self._epoch:
                continue  # left over from an epoch that was cut short
            if isinstance(result, StreamEnd):
                self._active[result.worker_id] = False
                self._waiting.pop(number, None)  # passed over already if it came late
                self._send_task()  # to a worker whose stream goes on
            elif number == self._yielded:
                return self._deliver(result)
            else:
                self._early[number] = result

    def _send_task(self) -> None:
        if not any(self._active):
            return
        indices = None if self._is_stream else next(self._indices, _NO_TASK)
        if indices is _NO_TASK:
            return
        worker_id = next(self._turns)
        while not self._active[worker_id]:
            worker_id = next(self._turns)
        self._index_queues[worker_id].put((self._epoch, self._sent, indices))
        self._waiting[self._sent] = worker_id
        self._sent += 1

    def _skip_tasks_of_spent_streams(self) -> None:
        """Tasks sent to a worker before its StreamEnd came get no answer: pass them."""
        while self._yielded < self._sent and self._yielded not in self._early:
            worker_id = self._waiting.get(self._yielded)
            if worker_id is not None and self._active[worker_id]:
                return
            self._waiting.pop(self._yielded, None)
            self._yielded += 1

    def _deliver(self, result):
        del self._waiting[self._yielded]
        self._yielded += 1
        self._send_task()
        if isinstance(result, WorkerError):
            result.reraise()
        return unpack(result)

    def _next_result(self) -> tuple:
        """The next (epoch, task number, result) from any worker; RuntimeError when a
        worker has died or `timeout` seconds pass without one."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            try:
                return pickle.loads(self._results.get(timeout=wait))
            except queue.Empty:
                pass
            dead = [(worker_id, worker) for worker_id, worker in enumerate(self._workers)
                    if not worker.is_alive()]
            if dead:
                self.close()
                raise RuntimeError("DataLoader worker " + "; ".join(
                    f"{worker_id} (pid {worker.pid}) {_how_it_ended(worker.exitcode)}"
                    for worker_id, worker in dead))
            if deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds "
                                   "waiting for a batch from its workers")


def _how_it_ended(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"was killed by signal {signal.Signals(-exitcode).name}"
    return f"exited unexpectedly with exit code {exitcode}"


def _shut_down(workers: list, index_queues: list, results) -> None:
    """Tell each worker to stop, wait for it (terminating one that does not stop in
    SHUTDOWN_WAIT seconds) so that none is left a zombie, and close the queues."""
    for index_queue in index_queues:
        index_queue.put(None)
    deadline = time.monotonic() + SHUTDOWN_WAIT
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive():
            worker.terminate()
            worker.join()
    for each_queue in (*index_queues, results):
        each_queue.cancel_join_thread()
        each_queue.close()
