"""ReduceOp, and how each reduction is carried out for each dtype by a backend.

MPI and NCCL reduce numbers, not booleans, and have no average. So a bool tensor travels
as uint8 (0 or 1) where SUM and MAX are "any" (a logical or, as PyTorch's NCCL backend
does it) and PRODUCT and MIN are "all"; AVG is a SUM followed by a division by the world
size, defined for floating-point tensors only (PyTorch refuses it for bool, and an integer
mean would have to be rounded, which would hide the remainder).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np


class ReduceOp(enum.Enum):
    """The reductions of `all_reduce`: `ReduceOp.SUM`, `PRODUCT`, `MIN`, `MAX`, `AVG`."""

    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


@dataclass(frozen=True)
class ReductionPlan:
    """What goes over the wire: values of `wire_dtype` reduced with `wire_op` (never AVG),
    then divided by the world size when `average`."""

    wire_dtype: np.dtype
    wire_op: ReduceOp
    average: bool


_BOOL_OPS = {ReduceOp.SUM: ReduceOp.MAX, ReduceOp.MAX: ReduceOp.MAX,
             ReduceOp.PRODUCT: ReduceOp.MIN, ReduceOp.MIN: ReduceOp.MIN}


def reduction_problem(op, dtype: np.dtype) -> Exception | None:
    """Why `op` cannot reduce tensors of `dtype` (None when it can)."""
    if not isinstance(op, ReduceOp):
        return TypeError(f"op must be a minigrad.distributed.ReduceOp (SUM, PRODUCT, MIN, "
                         f"MAX, AVG), got {op!r}")
    if op is ReduceOp.AVG and np.dtype(dtype).kind != "f":
        return TypeError(f"ReduceOp.AVG needs a floating-point tensor, got {np.dtype(dtype)}; "
                         "use ReduceOp.SUM and divide by get_world_size() yourself")
    return None


def reduction_plan(op: ReduceOp, dtype: np.dtype, float16_on_wire: bool) -> ReductionPlan:
    """How to reduce `dtype` with `op` (already checked by `reduction_problem`).

    `float16_on_wire=False` reduces float16 in float32 (MPI has no portable half type);
    the result is then the correctly rounded sum, the best a float16 sum can be."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return ReductionPlan(np.dtype(np.uint8), _BOOL_OPS[op], False)
    if dtype == np.float16 and not float16_on_wire:
        dtype = np.dtype(np.float32)
    if op is ReduceOp.AVG:
        return ReductionPlan(dtype, ReduceOp.SUM, True)
    return ReductionPlan(dtype, op, False)
