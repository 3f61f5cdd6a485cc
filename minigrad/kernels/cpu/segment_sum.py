"""The Numba kernel of a segment sum on the CPU: rows added into the segments their ids
name, in index order.

Contract: values is C-contiguous (n, width), float32 or float64; ids is (n,) of integers
in [0, count); out is (count, width) of values' dtype and holds zeros on entry (NumPy's
zeros: a large vocabulary's rows that no id names are never touched).

Order, and why it is the twin's, bit for bit: the twin is NumPy's `add.at` into zeros,
which takes the positions one after another in index order, each an addition
`out[ids[i]] = out[ids[i]] + values[i]`. This kernel makes the same additions in the same
order from the same zeros, with no fastmath (no reassociation), so every sum is rounded
as the twin's, -0 included (0 + -0 is +0 in both).

Performance rule: one pass over values in memory order, no sort and no per-element index
arithmetic: each row's width loop vectorises. 2-20x faster than sorting the ids and
summing each run with reduceat (kernels/thresholds.py). Serial, as the other kernels (see
softmax.py).
"""

from minigrad.kernels.cpu.jit import kernel


@kernel
def sum_segments(values, ids, out):
    """out[s] (zeros) + the rows values[i] with ids[i] == s, added in index order."""
    width = values.shape[1]
    for i in range(ids.shape[0]):
        segment = ids[i]
        for j in range(width):
            out[segment, j] = out[segment, j] + values[i, j]
