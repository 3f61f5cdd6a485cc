"""Starting jobs of several ranks from the tests: `mpiexec -n N python ...` with a
timeout, and the marker that skips such tests (with the reason) where mpi4py or an
mpiexec is missing."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minigrad.distributed.launch import find_mpiexec, mpiexec_command

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "mpi"

needs_mpi = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or find_mpiexec() is None,
    reason="mpi4py or mpiexec missing: pip install -e '.[distributed]' (mpi4py, MPICH)")


def job_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}


def run_job(script: str, *args: str, ranks: int | None = 2, timeout: float = 120):
    """Run tests/mpi/<script> under mpiexec (ranks=None: one plain process)."""
    return run_ranks([sys.executable, str(SCRIPTS / script), *args], ranks, timeout)


def run_ranks(command: list[str], ranks: int | None = 2, timeout: float = 120):
    """Run `command` on `ranks` ranks (None: once, without mpiexec)."""
    launcher = [] if ranks is None else mpiexec_command(ranks)
    return subprocess.run([*launcher, *command], cwd=ROOT, env=job_env(), capture_output=True,
                          text=True, timeout=timeout)
