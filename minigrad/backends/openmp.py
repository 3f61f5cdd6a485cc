"""`mg.backends.openmp`: minigrad is not built with OpenMP (is_available() is False): its
parallel CPU kernels run on Numba's threading layer, sized by NUMBA_NUM_THREADS."""
from __future__ import annotations


def is_available() -> bool:
    return False
