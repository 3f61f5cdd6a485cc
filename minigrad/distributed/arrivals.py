"""Where every rank is in the sequence of collectives, readable by the others when one of
them waits too long.

Each rank numbers the collectives it starts 1, 2, 3, ... (all ranks call the same
collectives in the same order, so collective n is the same call everywhere) and, as it
starts one, writes the number, the name and the time into a record that the other ranks
can read: an MPI one-sided window, read by passive-target gets, so writing it is a local
store and sends nothing. Only a rank whose collective timed out reads the others' records,
so the board costs a store per collective until then. A record also says when its rank
has left (destroyed the process group, or ended its script).

The board keeps its own duplicate of the communicator: the barrier that
destroy_process_group waits in can never be matched with a collective of the program.
"""
from __future__ import annotations

import struct
import time
from datetime import timedelta

from mpi4py import MPI

from minigrad.distributed.timeouts import (
    Arrival,
    DistBackendError,
    Ticket,
    poll_until,
    timeout_message,
)

POSITION = struct.Struct("<qd48s")  # number, time.time() and name of the last collective
LEFT = struct.Struct("48s")  # after it: how the rank left, empty while it is in the group
RECORD_BYTES = POSITION.size + LEFT.size
READ_SECONDS = 1.0  # how long a timed-out rank waits for the others' records


class ArrivalBoard:
    """Numbers this rank's collectives, gives each a deadline, posts where this rank is,
    and, when a deadline passes, reads where the others are and aborts the group."""

    def __init__(self, comm, timeout: timedelta):
        self.comm = comm.Dup()
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.timeout = timeout
        self.sequence = 0
        self.failure: DistBackendError | None = None
        self._window = MPI.Win.Allocate(RECORD_BYTES, 1, comm=self.comm)
        self._record = self._window.tomemory()
        POSITION.pack_into(self._record, 0, 0, time.time(), b"")
        LEFT.pack_into(self._record, POSITION.size, b"")
        self._window.Lock_all()
        self._window.Sync()

    def start(self, collective: str, timeout: timedelta | None = None) -> Ticket:
        """Number and post a collective this rank starts now; raise if the group was
        aborted. `timeout` (checked by the caller) replaces the group's for this call."""
        ticket = self._next_ticket(collective, timeout)
        self.sequence = ticket.sequence
        POSITION.pack_into(self._record, 0, ticket.sequence, time.time(), collective.encode())
        self._window.Sync()
        return ticket

    def wait(self, request, ticket: Ticket) -> None:
        """Complete the MPI request of `ticket`'s collective, or raise its timeout error."""
        if not poll_until(request.Test, ticket.deadline):
            raise self.expired(ticket)

    def expired(self, ticket: Ticket) -> DistBackendError:
        """The error for `ticket`'s collective not completing in time; from now on the
        group is aborted."""
        self.failure = DistBackendError(timeout_message(ticket, self.rank, self.read()))
        return self.failure

    def read(self) -> list[Arrival | int]:
        """Every other rank's record, or its rank number when it did not answer within
        READ_SECONDS."""
        buffers = {rank: bytearray(RECORD_BYTES) for rank in range(self.size)
                   if rank != self.rank}
        requests = {rank: self._window.Rget([buffer, MPI.BYTE], rank)
                    for rank, buffer in buffers.items()}
        deadline = time.monotonic() + READ_SECONDS
        answers: list[Arrival | int] = []
        for rank, request in requests.items():
            if not poll_until(request.Test, deadline):
                answers.append(rank)
                continue
            sequence, started, collective = POSITION.unpack_from(buffers[rank])
            (left,) = LEFT.unpack_from(buffers[rank], POSITION.size)
            answers.append(Arrival(rank, sequence, _text(collective), started, _text(left)))
        return answers

    def close(self, collective: str, how: str, timeout: timedelta | None = None) -> None:
        """Post that this rank leaves (`how`), wait (up to `timeout`, by default the
        group's) until every rank closes its board, then free it: the window can only be
        freed by all ranks together. `collective` names the caller in a timeout error;
        the record keeps the last collective of the program."""
        ticket = self._next_ticket(collective, timeout)
        LEFT.pack_into(self._record, POSITION.size, how.encode())
        self._window.Sync()
        self.wait(self.comm.Ibarrier(), ticket)
        self._window.Unlock_all()
        self._window.Free()
        self.comm.Free()

    def _next_ticket(self, collective: str, timeout: timedelta | None) -> Ticket:
        """The ticket of the next collective; raise if the group was aborted."""
        if self.failure is not None:
            raise DistBackendError(f"{collective}: the process group was aborted after an "
                                   f"earlier collective failed: {self.failure}")
        timeout = self.timeout if timeout is None else timeout
        return Ticket(self.sequence + 1, collective, timeout,
                      time.monotonic() + timeout.total_seconds())


def _text(field: bytes) -> str:
    """A name as posted: struct pads it with zero bytes and may cut it mid-character."""
    return field.rstrip(b"\0").decode(errors="replace")
