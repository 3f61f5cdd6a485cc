"""minigrad.distributed and DistributedDataParallel, two ranks under mpiexec.

The checks themselves run inside the ranks (tests/mpi/*.py); each test here starts one
job, with a timeout, and reads its exit status and output. Without mpi4py and an mpiexec
(pip install -e ".[distributed]") they skip with the reason; the checks that need no
MPI at all run anyway.
"""
import re
import subprocess
import sys
import time

import pytest
from mpi_jobs import ROOT, job_env, needs_mpi, run_job, run_ranks

import minigrad as mg
import minigrad.distributed as dist

RANKS = 2


def assert_every_rank_passed(result, ranks: int, marker: str) -> None:
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(ranks):
        assert f"rank {rank} of {ranks}: " in result.stdout, result.stdout
    assert result.stdout.count(marker) == ranks, result.stdout


def test_collectives_before_init_raise_and_nothing_needs_mpi4py():
    assert not dist.is_initialized()
    for call in (lambda: dist.all_reduce(mg.zeros(2)), lambda: dist.get_rank(),
                 lambda: dist.broadcast(mg.zeros(2), 0), lambda: dist.barrier()):
        with pytest.raises(RuntimeError, match="not been initialized.*init_process_group"):
            call()
    with pytest.raises(ValueError, match="unknown backend 'gloo'.*minigrad's is 'mpi'"):
        dist.init_process_group("gloo")


def test_without_mpi4py_everything_imports_and_init_says_what_to_install():
    code = """
import sys
sys.modules["mpi4py"] = None  # as if it were not installed
import minigrad as mg, minigrad.distributed as dist
from minigrad.nn.parallel import DistributedDataParallel
from minigrad.utils.data import DataLoader, DistributedSampler
assert not dist.is_available()
try:
    dist.init_process_group()
except RuntimeError as error:
    print(error)
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, env=job_env())
    assert result.returncode == 0, result.stderr
    assert "mpi4py is not installed; pip install 'minigrad[distributed]'" in result.stdout


@needs_mpi
def test_every_collective_op_and_dtype_matches_numpy_on_both_ranks():
    result = run_job("collectives.py")
    assert_every_rank_passed(result, RANKS, "collective checks passed")


@needs_mpi
def test_collectives_in_a_job_of_one():
    result = run_job("collectives.py", ranks=None)
    assert_every_rank_passed(result, 1, "collective checks passed")


@needs_mpi
def test_ddp_matches_one_process_on_the_whole_batch():
    result = run_job("ddp.py")
    assert_every_rank_passed(result, RANKS, "DDP checks passed")


@needs_mpi
@pytest.mark.parametrize("failure", ["raise", "kill"])
def test_a_failing_rank_ends_the_job_quickly(failure):
    started = time.monotonic()
    result = run_job("failures.py", failure, timeout=30)
    assert time.monotonic() - started < 30
    assert result.returncode != 0, result.stdout + result.stderr
    assert "the job was not stopped" not in result.stdout
    assert f"rank 1 fails at step 3 ({failure})" in result.stdout
    if failure == "raise":
        assert "[rank 1] uncaught exception, aborting all 2 ranks" in result.stderr
        assert "ValueError: rank 1 fails on purpose" in result.stderr


@needs_mpi
def test_the_documented_training_script_runs_on_two_ranks(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "distributed.md").read_text(),
                        flags=re.DOTALL)
    (script,) = [block for block in blocks if "init_process_group" in block]
    checkpoint = tmp_path / "demo.safetensors"
    path = tmp_path / "train.py"
    path.write_text(script.replace("/tmp/demo.safetensors", str(checkpoint)))
    result = run_ranks([sys.executable, str(path)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert mg.load(str(checkpoint))["0.weight"].shape == (32, 8)
