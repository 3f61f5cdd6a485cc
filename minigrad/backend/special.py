"""Special functions that NumPy lacks: erf (for the exact GELU)."""
from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=1)
def _numba_erf():
    """math.erf as a NumPy ufunc, compiled by Numba on first use (cached on disk)."""
    import math

    from numba import vectorize

    @vectorize(["float32(float32)", "float64(float64)"], cache=True)
    def erf(x):
        return math.erf(x)

    return erf


def erf(x):
    """The error function erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt, elementwise."""
    if isinstance(x, (np.ndarray, np.generic)):  # a 0-d product is a NumPy scalar
        x = np.asarray(x)
        if x.dtype == np.float16:
            return _numba_erf()(x.astype(np.float32)).astype(np.float16)
        return _numba_erf()(x)
    import cupyx.scipy.special

    return cupyx.scipy.special.erf(x)
