"""Every collective, op and dtype against NumPy, and every misuse error, on every rank.

Run by tests/test_distributed.py as `mpiexec -n 2 python tests/mpi/collectives.py` (and
as a plain one-process job). Each rank computes what every rank holds, so it can check
its own result against NumPy; it prints one line when all checks passed, and any failed
check aborts the job with a non-zero exit.
"""
import numpy as np

import minigrad as mg
import minigrad.distributed as dist
from minigrad.distributed import ReduceOp

DTYPES = (mg.float16, mg.float32, mg.float64, mg.int64, mg.bool)
SHAPES = ((), (5,), (3, 4), (0, 3))
TOLERANCE = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}


def values_of(rank: int, dtype, shape, salt: int = 0) -> np.ndarray:
    """What `rank` contributes: the same on every rank that asks."""
    rng = np.random.default_rng([salt, rank, len(shape)])
    if dtype is mg.bool:
        return rng.random(shape) < 0.5
    if dtype is mg.int64:
        return rng.integers(-20, 20, shape)
    return (rng.standard_normal(shape) * 3).astype(dtype.np)


def numpy_reduce(op: ReduceOp, stacked: np.ndarray, dtype) -> np.ndarray:
    if dtype is mg.bool:  # SUM and MAX are "any", PRODUCT and MIN "all"
        return stacked.any(0) if op in (ReduceOp.SUM, ReduceOp.MAX) else stacked.all(0)
    wide = stacked.astype(np.float64) if dtype.is_floating_point else stacked
    result = {ReduceOp.SUM: wide.sum(0), ReduceOp.PRODUCT: wide.prod(0),
              ReduceOp.MIN: wide.min(0), ReduceOp.MAX: wide.max(0),
              ReduceOp.AVG: wide.mean(0) if dtype.is_floating_point else None}[op]
    return result.astype(dtype.np)


def assert_matches(actual: mg.Tensor, expected: np.ndarray, dtype, what: str) -> None:
    assert actual.dtype is dtype, f"{what}: dtype {actual.dtype}, expected {dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    tolerance = TOLERANCE.get(dtype.name)
    if tolerance is None:
        np.testing.assert_array_equal(actual.numpy(), expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual.numpy(), expected, rtol=tolerance, atol=tolerance,
                                   err_msg=what)


def check_all_reduce(rank: int, size: int) -> int:
    checks = 0
    for dtype in DTYPES:
        ops = [op for op in ReduceOp if op is not ReduceOp.AVG or dtype.is_floating_point]
        for op in ops:
            for shape in SHAPES:
                stacked = np.stack([values_of(r, dtype, shape) for r in range(size)])
                tensor = mg.tensor(values_of(rank, dtype, shape), dtype=dtype)
                dist.all_reduce(tensor, op=op)
                assert_matches(tensor, numpy_reduce(op, stacked, dtype), dtype,
                               f"all_reduce {op.name} {dtype} {shape}")
                checks += 1
            # a non-contiguous view is reduced in place too (staged and written back)
            base = mg.tensor(values_of(rank, dtype, (4, 3)), dtype=dtype)
            view = base.T
            dist.all_reduce(view, op=op)
            stacked = np.stack([values_of(r, dtype, (4, 3)).T for r in range(size)])
            assert_matches(base.T, numpy_reduce(op, stacked, dtype), dtype,
                           f"all_reduce {op.name} {dtype} transposed view")
            checks += 1
    tensor = mg.tensor(values_of(rank, mg.float64, (6,)), dtype=mg.float64)
    work = dist.all_reduce(tensor, op=ReduceOp.SUM, async_op=True)
    work.wait()
    expected = np.sum([values_of(r, mg.float64, (6,)) for r in range(size)], axis=0)
    assert_matches(tensor, expected, mg.float64, "async all_reduce")
    return checks + 1


def check_broadcast_and_gather(rank: int, size: int) -> int:
    checks = 0
    for dtype in DTYPES:
        for shape in SHAPES[:3]:
            for src in range(size):
                tensor = mg.tensor(values_of(rank, dtype, shape, salt=1), dtype=dtype)
                dist.broadcast(tensor, src=src)
                assert_matches(tensor, values_of(src, dtype, shape, salt=1), dtype,
                               f"broadcast {dtype} {shape} from {src}")
                checks += 1
            outputs = [mg.zeros(shape, dtype=dtype) for _ in range(size)]
            dist.all_gather(outputs, mg.tensor(values_of(rank, dtype, shape, 2), dtype=dtype))
            for r, output in enumerate(outputs):
                assert_matches(output, values_of(r, dtype, shape, 2), dtype,
                               f"all_gather {dtype} {shape} from rank {r}")
            checks += 1
    view = mg.tensor(values_of(rank, mg.float32, (4, 3), 3)).T
    dist.broadcast(view, src=size - 1)
    assert_matches(view, values_of(size - 1, mg.float32, (4, 3), 3).T, mg.float32,
                   "broadcast into a transposed view")
    gathered = [None] * size
    dist.all_gather_object(gathered, {"rank": rank, "text": "é" * rank})
    assert gathered == [{"rank": r, "text": "é" * r} for r in range(size)], gathered
    objects = [rank, f"from {rank}"] if rank == 0 else [None, None]
    dist.broadcast_object_list(objects, src=0)
    assert objects == [0, "from 0"], objects
    dist.barrier()
    return checks + 3


def expect_error(kind, fragments, call) -> None:
    """call() must raise `kind` whose message holds every fragment."""
    try:
        call()
    except kind as error:
        for fragment in fragments:
            assert fragment in str(error), f"{fragment!r} not in {str(error)!r}"
    else:
        raise AssertionError(f"expected {kind.__name__} with {fragments}")


def check_still_in_step(rank: int, size: int) -> None:
    """After an error every rank is still at the same collective: a correct one works."""
    tensor = mg.tensor([float(rank + 1)])
    dist.all_reduce(tensor)
    assert tensor.item() == size * (size + 1) / 2, tensor


def check_misuse(rank: int, size: int) -> int:
    other = 1 if size > 1 else 0
    cases = [
        (mg.float32, ReduceOp.AVG, mg.int64, TypeError,
         ["all_reduce on rank", "AVG needs a floating-point tensor, got int64"]),
        (mg.float32, ReduceOp.AVG, mg.bool, TypeError, ["AVG needs a floating-point"]),
    ]
    for _, op, dtype, kind, fragments in cases:
        expect_error(kind, fragments,
                     lambda op=op, dtype=dtype: dist.all_reduce(mg.zeros(3, dtype=dtype), op))
        check_still_in_step(rank, size)
    expect_error(ValueError, [f"broadcast on rank {rank}", f"src={size}"],
                 lambda: dist.broadcast(mg.zeros(2), src=size))
    expect_error(ValueError, [f"all_gather on rank {rank}", "tensor_list must hold"],
                 lambda: dist.all_gather([mg.zeros(2)] * (size + 1), mg.zeros(2)))
    expect_error(TypeError, ["tensor must be a minigrad Tensor, got ndarray"],
                 lambda: dist.all_reduce(np.zeros(3)))
    check_still_in_step(rank, size)
    if size == 1:
        return 6
    # the ranks disagree: every rank raises, naming the ranks and what differs
    expect_error(RuntimeError, ["disagree on shape", "rank 0 has (2,)", "rank 1 has (3,)"],
                 lambda: dist.all_reduce(mg.zeros(2 + min(rank, 1))))
    check_still_in_step(rank, size)
    dtype = mg.float64 if rank == other else mg.float32
    expect_error(RuntimeError, ["disagree on dtype", "rank 0 has float32",
                                "rank 1 has float64"],
                 lambda: dist.all_reduce(mg.zeros(3, dtype=dtype)))
    op = ReduceOp.MAX if rank == other else ReduceOp.SUM
    expect_error(RuntimeError, ["disagree on op", "rank 0 has SUM", "rank 1 has MAX"],
                 lambda: dist.all_reduce(mg.zeros(3), op=op))
    expect_error(RuntimeError, ["broadcast: the ranks disagree on src"],
                 lambda: dist.broadcast(mg.zeros(3), src=min(rank, 1)))
    expect_error(RuntimeError, ["all_gather: the ranks disagree on shape"],
                 lambda: dist.all_gather([mg.zeros((2, 1 + min(rank, 1)))] * size,
                                         mg.zeros((2, 1 + min(rank, 1)))))

    def mismatched_collectives():
        if rank == other:
            dist.broadcast(mg.zeros(3), src=0)
        else:
            dist.all_reduce(mg.zeros(3))

    expect_error(RuntimeError, ["collective mismatch", "rank 0 called all_reduce",
                                "rank 1 called broadcast"], mismatched_collectives)
    # one rank's bad argument: it raises its own error, the others name it
    bad_op = "sum" if rank == other else ReduceOp.SUM
    if rank == other:
        expect_error(TypeError, ["all_reduce on rank 1", "op must be a"],
                     lambda: dist.all_reduce(mg.zeros(3), op=bad_op))
    else:
        expect_error(RuntimeError, ["all_reduce: rank 1 could not take part", "op must be"],
                     lambda: dist.all_reduce(mg.zeros(3), op=bad_op))
    check_still_in_step(rank, size)
    return 14


def check_sampler_defaults(rank: int, size: int) -> int:
    from minigrad.utils.data import DistributedSampler

    sampler = DistributedSampler(list(range(11)), shuffle=False)
    assert (sampler.num_replicas, sampler.rank) == (size, rank)
    expected = list(range(11)) + list(range(-(-11 // size) * size - 11))
    assert list(sampler) == expected[rank::size], list(sampler)
    return 1


def main() -> None:
    assert not dist.is_initialized()
    expect_error(RuntimeError, ["all_reduce", "not been initialized",
                                "init_process_group()"], lambda: dist.all_reduce(mg.zeros(1)))
    dist.init_process_group("mpi")
    expect_error(RuntimeError, ["already initialized"], lambda: dist.init_process_group())
    rank, size = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    checks = check_all_reduce(rank, size)
    checks += check_broadcast_and_gather(rank, size)
    checks += check_misuse(rank, size)
    checks += check_sampler_defaults(rank, size)
    dist.destroy_process_group()
    assert not dist.is_initialized()
    print(f"rank {rank} of {size}: {checks} collective checks passed", flush=True)


if __name__ == "__main__":
    main()
