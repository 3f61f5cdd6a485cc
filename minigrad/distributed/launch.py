"""The command line that starts N local ranks: `mpiexec -n N`, plus the flags Open MPI
needs to run as root on a small machine (MPICH needs none)."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path


def find_mpiexec() -> str | None:
    """The mpiexec of this Python environment (the MPI its mpi4py was installed with:
    `pip install 'minigrad[distributed]'` puts MPICH's beside the interpreter), else the
    first on the PATH, else None."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpiexec")


def mpiexec_command(processes: int) -> list[str]:
    """['mpiexec', '-n', N, ...]: prefix it to `python script.py`. Raises RuntimeError when
    there is no mpiexec (pip install 'minigrad[distributed]' brings MPICH's)."""
    launcher = find_mpiexec()
    if launcher is None:
        raise RuntimeError("no mpiexec found: pip install 'minigrad[distributed]' "
                           "(mpi4py and MPICH)")
    command = [launcher, "-n", str(processes)]
    if _is_open_mpi(launcher):
        # Open MPI refuses root and more ranks than cores unless told
        command += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    return command


@functools.cache
def _is_open_mpi(launcher: str) -> bool:
    result = subprocess.run([launcher, "--version"], capture_output=True, text=True,
                            timeout=30)
    return "Open MPI" in result.stdout + result.stderr
