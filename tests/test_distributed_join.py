"""DistributedDataParallel.join and Join: uneven inputs train to completion on two ranks
under mpiexec, with PyTorch's semantics (tests/mpi/join.py)."""
import pytest
from mpi_jobs import needs_mpi, run_job

from minigrad.distributed.algorithms import Join


def test_join_needs_a_joinable():
    with pytest.raises(ValueError, match="Join: the join context manager requires at least "
                                         "one joinable"):
        Join([])


@needs_mpi
def test_join_trains_uneven_inputs_as_numpy_by_hand_and_pytorch_ddp_join():
    pytest.importorskip("torch")
    result = run_job("join.py")
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(2):
        assert f"rank {rank} of 2: 8 join checks passed" in result.stdout, result.stdout
