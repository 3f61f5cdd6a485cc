"""The sum of an array over its first `count` axes (a bias's gradient, the adjoint of a
broadcast over leading dims): the reference twin and its dispatcher, which takes the Numba
kernel of kernels/cpu/leading_sum.py where dispatch.py and the thresholds allow.

The kernel adds the rows of x viewed as (rows, width), width = the product of the kept
shape x.shape[count:], in NumPy's own order, so it returns the twin's bits (NaN payloads
aside, see the kernel's docstring). That holds only for C-contiguous x (NumPy orders other
layouts' reductions by their strides) and for widths of at least MIN_WIDTH (NumPy sums a
single column pairwise). Other inputs take the twin: other layouts and widths, CuPy arrays,
float16 and integers (summed as NumPy sums them), and every input in "numpy" kernel mode.
"""
import math

import numpy as np

from minigrad.kernels.dispatch import cpu_kernels_for
from minigrad.kernels.thresholds import MIN_SIZE

# the narrowest width whose sums NumPy adds row by row: checked against NumPy 2.4 for
# widths 2-69 and 100-5000, rows 1 to 2**20, in 2-4 dims (and NumPy 1.26 up to width 257)
MIN_WIDTH = 2


def leading_sum_twin(x, count: int):
    """x summed over its axes 0 .. count - 1 by the array library."""
    return x.sum(axis=tuple(range(count)))


def leading_sum(x, count: int):
    """x summed over its first `count` axes: shape x.shape[count:], x's dtype."""
    cpu = cpu_kernels_for("leading_sum", MIN_SIZE["leading_sum"], x.size, x)
    if cpu is None or count < 1 or not x.flags.c_contiguous:
        return leading_sum_twin(x, count)
    kept_shape = x.shape[count:]
    width = math.prod(kept_shape)
    if width < MIN_WIDTH:
        return leading_sum_twin(x, count)
    out = np.empty(kept_shape, x.dtype)
    cpu.sum_rows(x.reshape(-1, width), out.reshape(width))
    return out
