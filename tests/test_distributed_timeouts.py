"""Collectives with a timeout: jobs of two ranks under mpiexec (tests/mpi/timeouts.py)
whose collectives cannot complete must end soon after the timeout, with an error that
names the collective, the rank that did not arrive and the likely cause."""
import re
import time
from datetime import timedelta

import pytest
from mpi_jobs import needs_mpi, run_job

import minigrad.distributed as dist

TIMEOUT_SECONDS = 2  # the timeout tests/mpi/timeouts.py gives the uneven jobs
STARTUP_SECONDS = 10  # a generous bound on starting two ranks and training a few steps


def run_timed(mode: str):
    started = time.monotonic()
    result = run_job("timeouts.py", mode, timeout=60)
    return result, time.monotonic() - started


def test_init_process_group_checks_its_timeout_and_init_method():
    assert dist.default_pg_timeout == timedelta(minutes=30)
    with pytest.raises(TypeError, match=r"init_process_group: timeout must be a "
                                        r"datetime.timedelta, got 1800 \(int\)"):
        dist.init_process_group(timeout=1800)
    with pytest.raises(ValueError, match="init_process_group: timeout must be positive"):
        dist.init_process_group(timeout=timedelta(seconds=-1))
    with pytest.raises(ValueError, match="init_method='env://' is not used: the MPI launcher"):
        dist.init_process_group(init_method="env://")
    assert not dist.is_initialized()


@needs_mpi
def test_uneven_inputs_without_join_end_the_job_after_the_timeout_naming_the_cause():
    result, elapsed = run_timed("uneven")
    assert elapsed < TIMEOUT_SECONDS + STARTUP_SECONDS
    assert result.returncode != 0, result.stdout + result.stderr
    assert "rank 0 finished its 3 batches" in result.stdout
    found = re.search(r"DistributedDataParallel gradient all_reduce timed out on rank 1 after "
                      r"0:00:02 \(its collective #(\d+)\): rank 0 did not arrive: it ended "
                      r"its script after its collective #(\d+) \(DistributedDataParallel "
                      r"gradient all_reduce, started", result.stderr)
    assert found, result.stderr
    assert int(found[1]) == int(found[2]) + 1
    assert "most likely uneven inputs: a rank ran out of batches" in result.stderr
    assert "train inside `with model.join():`" in result.stderr
    assert "[rank 1] uncaught exception, aborting all 2 ranks" in result.stderr


@needs_mpi
def test_destroy_process_group_while_another_rank_still_trains_ends_the_job():
    result, elapsed = run_timed("uneven-destroy")
    assert elapsed < TIMEOUT_SECONDS + STARTUP_SECONDS
    assert result.returncode != 0, result.stdout + result.stderr
    found = re.search(r"destroy_process_group timed out on rank 0 after 0:00:02 \(its "
                      r"collective #(\d+)\): rank 1 called DistributedDataParallel gradient "
                      r"all_reduce as its collective #(\d+) instead", result.stderr)
    assert found and found[1] == found[2], result.stderr
    assert "most likely uneven inputs" in result.stderr


@needs_mpi
def test_a_barrier_timeout_names_the_late_rank_and_a_caught_one_aborts_at_exit():
    result, elapsed = run_timed("barrier")
    assert elapsed < 1 + STARTUP_SECONDS  # rank 1 sleeps for 30 s: only the abort ends it
    assert result.returncode != 0, result.stdout + result.stderr
    assert "rank 0 caught the timeout after" in result.stdout
    assert ("[rank 0] the process group was aborted after a failed collective; aborting all "
            "2 ranks at exit") in result.stderr


@needs_mpi
def test_the_default_timeout_is_30_minutes_and_one_can_be_given():
    result = run_job("timeouts.py", "defaults", ranks=None)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "timeout defaults checked" in result.stdout
