"""Ending a whole MPI job from one rank, without losing what that rank just printed."""
from __future__ import annotations

import sys
import time

# mpiexec forwards each rank's output through a pipe, and MPI_Abort ends the job at once:
# a line still in the pipe would be lost with it (a rank's last words, usually the error)
OUTPUT_GRACE_SECONDS = 0.25


def abort_job(comm, status: int = 1) -> None:
    """Flush this rank's output, give mpiexec time to forward it, then MPI_Abort `comm`
    (every rank of the job ends with `status`)."""
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(OUTPUT_GRACE_SECONDS)
    comm.Abort(status)
