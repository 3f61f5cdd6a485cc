"""minigrad.distributed: data-parallel training across processes and machines, with
PyTorch's names (torch.distributed).

    mpiexec -n 2 python train.py          # two processes; -hosts / -f hostfile for machines

    import minigrad.distributed as dist
    dist.init_process_group("mpi")        # "nccl": one GPU per rank, GPU tensors over NCCL
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

MPI (mpi4py) moves CPU tensors and starts the job; NCCL (CuPy) moves GPU tensors. Without
mpi4py installed everything imports, `is_available()` is False and init_process_group
says what to install. A collective that does not complete within the group's timeout
(`init_process_group(timeout=datetime.timedelta(...))`, 30 minutes by default) raises a
DistBackendError naming the ranks that did not arrive, and the job ends. See
minigrad.nn.parallel.DistributedDataParallel for training (and its join() for ranks with
uneven numbers of batches) and minigrad.utils.data.DistributedSampler for sharding the
data.
"""
from minigrad.distributed.collectives import (
    all_gather,
    all_gather_object,
    all_reduce,
    barrier,
    broadcast,
    broadcast_object_list,
)
from minigrad.distributed.group import (
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
)
from minigrad.distributed.reduce_op import ReduceOp
from minigrad.distributed.timeouts import DistBackendError, DistError, default_pg_timeout

__all__ = [
    "DistBackendError",
    "DistError",
    "ReduceOp",
    "all_gather",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "default_pg_timeout",
    "destroy_process_group",
    "get_backend",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
]
