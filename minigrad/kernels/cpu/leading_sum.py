"""The Numba kernel of a sum over the leading axes: the rows of a 2-D array added up.

Contract: x is C-contiguous (rows, width) with rows >= 1, float32 or float64; out is
(width,) of x's dtype and is written in full: out[j] = sum over i of x[i, j].

Order, and why it is NumPy's, bit for bit: NumPy reduces the leading axes of a C-contiguous
array by starting each output from the identity 0 and adding the rows one after another,
each row a vector add `out = out + x[i]` over the kept axis. This kernel does the same
additions in the same order, with no fastmath (no reassociation, no contraction), so every
result is rounded exactly as NumPy's, -0 included (0 + -0 is +0, as in NumPy). Two limits:
- width 1: NumPy then sums the one column pairwise, in blocks; the dispatcher never sends
  it here (see kernels/leading_sum.py);
- which NaN survives when two NaNs meet: NumPy adds its vector body with the running sum
  first and parts of its loop's tail with the row first, so NaN payloads and signs are not
  part of the contract; a NaN result is a NaN in both.

Performance rule: one pass over x in memory order; the width loop has no dependency from
one j to the next, so LLVM vectorises it. Serial, as the other kernels (see softmax.py).
"""

from minigrad.kernels.cpu.jit import kernel


@kernel
def sum_rows(x, out):
    """out = x[0] + x[1] + ... + x[rows - 1], added in that order from 0."""
    width = x.shape[1]
    for j in range(width):
        out[j] = 0
    for i in range(x.shape[0]):
        for j in range(width):
            out[j] = out[j] + x[i, j]
