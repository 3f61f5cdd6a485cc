"""`kernel`: the decorator of every Numba CPU kernel, numba.njit with an on-disk cache.

The first process compiles a kernel (0.2-1.3 s each) and saves the machine code next to
its source (or in NUMBA_CACHE_DIR); later processes load it in milliseconds. Where no
cache location is writable (a read-only install, no home folder), Numba refuses
`cache=True` outright; the kernels then compile in memory, every process, after one
warning, instead of failing.
"""
import warnings

from numba import njit

_warned = False


def kernel(function=None, **options):
    """`@kernel` or `@kernel(fastmath=...)`: numba.njit(cache=True, **options), falling
    back to cache=False where Numba finds no writable cache location.

    Arithmetic follows NumPy (error_model="numpy"): x / 0 is inf or NaN, as in the twins,
    rather than Python's ZeroDivisionError, whose check on every division also keeps LLVM
    from vectorising a loop that divides."""
    if function is None:
        return lambda f: kernel(f, **options)
    options.setdefault("error_model", "numpy")
    try:
        return njit(cache=True, **options)(function)
    except RuntimeError as exc:
        if "cannot cache" not in str(exc):
            raise
        _warn_once(exc)
        return njit(**options)(function)


def _warn_once(exc: Exception) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"minigrad: Numba kernels compile without a cache ({exc}); set "
                      "NUMBA_CACHE_DIR to a writable folder to keep them across runs",
                      RuntimeWarning, stacklevel=3)
