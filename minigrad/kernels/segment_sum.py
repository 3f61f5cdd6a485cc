"""Sums into repeated indices, in an order fixed by the data: the adjoint of every read at
integer positions (embedding, x[idx], gather, index_select) adds up the gradients of the
positions that repeat.

    index_add(shape, index, values) -> out           out = zeros(shape); out[index] += values
                                                     (every repeat of a position counted)
    segment_sum(values, segment_ids, count) -> out   out[s] = sum of the rows values[i]
                                                     with segment_ids[i] == s

The definition, and the CPU's twin, is `xp.add.at`. NumPy's adds in index order, so its
float sums repeat bit for bit. On the CPU the dispatcher runs the Numba kernel of
kernels/cpu/segment_sum.py for whole rows (an embedding's gradient), which makes add.at's
additions in add.at's order with no sort (its bits, 2-20x faster than sorting the ids, and
more against add.at itself); other indices, float16's float32 sums aside, and "numpy"
kernel mode take add.at.

CuPy's add.at adds with atomics, in whatever order the GPU's threads finish, so the sum
of a row used 100 times in a batch changes from run to run in its last bits, and a
training run on the GPU could not be repeated exactly. So on the GPU every such sum is a
sorted segment sum:

1. sort the segment ids stably, so the rows of one segment form a run, in index order;
2. sum each run pairwise, as a tree: in round r (stride s = 2**r) every row whose rank in
   its run is a multiple of 2s takes in the row s places after it, when that row is in
   the same run; after ceil(log2(n)) rounds, enough for one run of all n rows, each
   run's first row holds its sum (how long the longest run is would have to be read back
   to the host, which a CUDA graph cannot do);
3. write each run's sum to its segment.

Every round is elementwise over all rows and chooses its partners by the data alone, so
the GPU does the same additions in the same order on every run. It never multiplies a
gradient by zero (a one-hot matrix product would, turning one inf into NaN everywhere),
and its work does not grow with the number of segments (a vocabulary). float16 rows are
summed in float32.

Chosen without a GPU to time it on, by the work each does for n ids of width d into a
vocabulary of V: the sort and log2(longest run) rounds over the n x d rows, against the
one-hot product's V x n x d multiply-adds and V x n matrix (0.5 GB at 4096 ids and a
32000-word vocabulary). At small vocabularies the product needs fewer kernel launches
(about 4 against 9 per round here); benchmarks/gpu_check.sh times both
(benchmarks/bench_index_add.py), so a fast path for them waits for that figure.
"""
from __future__ import annotations

import math

import numpy as np

from minigrad.backend import array_module
from minigrad.kernels.dispatch import as_kernel_array, cpu_kernels_for, in_float32
from minigrad.kernels.thresholds import MIN_SIZE


def index_add(shape: tuple, index, values):
    """zeros(shape) with `values` added at `index` (any NumPy index: integers, slices,
    integer arrays, masks), every repeat of a position counted; `values` has the shape
    of `zeros(shape)[index]`."""
    xp = array_module(values)
    rows = _leading_dim_ids(index)
    if rows is not None:  # whole rows: sort only the ids, not every element's position
        ids = rows.reshape(-1) % shape[0] if rows.size else rows.reshape(-1)
        width = math.prod(shape[1:])
        return segment_sum(values.reshape(ids.size, width), ids, shape[0]).reshape(shape)
    if xp is np:
        return add_at_twin(shape, index, values)
    size = math.prod(shape)
    positions = xp.arange(size).reshape(shape)[index]
    values = xp.broadcast_to(values, positions.shape)
    return segment_sum(values.reshape(-1, 1), positions.reshape(-1), size).reshape(shape)


def add_at_twin(shape: tuple, index, values) -> np.ndarray:
    """zeros(shape) with NumPy's add.at of `values` at `index`: every position in index
    order, so the same bits on every run."""
    out = np.zeros(shape, dtype=values.dtype)
    np.add.at(out, index, values)
    return out


def segment_sum(values, segment_ids, count: int):
    """out[s] = sum of values[i] over the rows i with segment_ids[i] == s, for values of
    shape (n, d) and segment ids (n,) in [0, count); each segment's rows are added in an
    order fixed by the ids (see the module docstring), the same on every run."""
    if values.dtype == np.float16:
        return in_float32(_segment_sum, values, segment_ids, count)
    return _segment_sum(values, segment_ids, count)


def _segment_sum(values, segment_ids, count: int):
    if array_module(values) is not np:
        return _sorted_segment_sum(values, segment_ids, count)
    cpu = cpu_kernels_for("segment_sum", MIN_SIZE["segment_sum"], values.size, values)
    if cpu is None:
        return add_at_twin((count, values.shape[1]), segment_ids, values)
    out = np.zeros((count, values.shape[1]), dtype=values.dtype)
    cpu.sum_segments(as_kernel_array(values), segment_ids, out)
    return out


def _sorted_segment_sum(values, segment_ids, count: int):
    """The GPU's segment sum: a stable sort of the ids, then each run summed by the tree
    of the module docstring. Nothing is read back to the host (a CUDA graph can hold it):
    each run's sum is written to its segment, every other row to one more row, dropped."""
    xp = array_module(values)
    n = segment_ids.shape[0]
    out = xp.zeros((count + 1, values.shape[1]), dtype=values.dtype)
    if n == 0:
        return out[:count]
    order = xp.argsort(segment_ids, kind="stable")
    ids = segment_ids[order]
    rows = values[order]  # a copy: the tree sums it in place
    is_first = xp.ones(n, dtype=bool)
    is_first[1:] = ids[1:] != ids[:-1]
    out[xp.where(is_first, ids, count)] = _tree_sum_runs(rows, ids)
    return out[:count]


def _tree_sum_runs(rows, ids):
    """rows, summed in place pairwise within each run of equal (sorted) ids, so that the
    first row of each run holds the run's sum. ceil(log2(n)) rounds, enough for a run of
    all n rows: a shorter run takes nothing in its last rounds (+0 on every row)."""
    xp = array_module(rows)
    n = ids.shape[0]
    position = xp.arange(n)
    run_start = xp.searchsorted(ids, ids, side="left")
    run_end = xp.searchsorted(ids, ids, side="right")
    rank = position - run_start
    stride = 1
    while stride < n:
        partner = position + stride
        takes = (rank % (2 * stride) == 0) & (partner < run_end)
        # a row that takes nothing at this stride gets +0, picked by where: never inf * 0
        rows += xp.where(takes[:, None], rows[xp.minimum(partner, n - 1)], 0)
        stride *= 2
    return rows


def _leading_dim_ids(index):
    """The integer array of an index that picks rows of the first dim only (`x[ids]`,
    `x[ids, :]`, `x[ids, ...]`), else None."""
    parts = index if isinstance(index, tuple) else (index,)
    first = parts[0] if parts else None
    if getattr(first, "dtype", None) is None or first.dtype.kind not in "iu":
        return None
    if isinstance(first, np.generic):
        return None
    rest_is_whole = all(p is Ellipsis or (isinstance(p, slice) and p == slice(None))
                        for p in parts[1:])
    return first if rest_is_whole else None
