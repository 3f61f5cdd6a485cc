"""Numba CPU kernels. Importing this package imports Numba (about half a second), so the
dispatchers in minigrad/kernels import it lazily, on the first kernel call.

Every kernel is @njit(cache=True): the first process compiles it (see the compile-time
figures in benchmarks/README_kernels.md) and later processes load machine code from
__pycache__. Numba checks only the timestamp of the file that holds the kernel it loads,
so after editing a helper in another file (fast_exp.py) delete the cached *.nbi/*.nbc.
"""
