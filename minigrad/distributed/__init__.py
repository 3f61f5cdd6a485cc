"""minigrad.distributed: data-parallel training across processes and machines, with
PyTorch's names (torch.distributed).

    mpiexec -n 2 python train.py          # two processes; -hosts / -f hostfile for machines

    import minigrad.distributed as dist
    dist.init_process_group("mpi")        # "nccl": one GPU per rank, GPU tensors over NCCL
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

MPI (mpi4py) moves CPU tensors and starts the job; NCCL (CuPy) moves GPU tensors. Without
mpi4py installed everything imports, `is_available()` is False and init_process_group
says what to install. See minigrad.nn.parallel.DistributedDataParallel for training and
minigrad.utils.data.DistributedSampler for sharding the data.
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

__all__ = [
    "ReduceOp",
    "all_gather",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
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
