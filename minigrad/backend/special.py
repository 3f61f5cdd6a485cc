"""Special functions that NumPy lacks: erf (for the exact GELU)."""
from __future__ import annotations

import functools

import numpy as np

from minigrad.backend.device import cupyx_special


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
    """The error function erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt, elementwise,
    in x's dtype."""
    if x.dtype == np.float16:
        # computed in float32: Numba's ufunc has no float16 loop, and cupyx's erf would
        # return float64 (its type map sends 'e' to 'd')
        return erf(x.astype(np.float32)).astype(np.float16)
    if isinstance(x, (np.ndarray, np.generic)):  # a 0-d product is a NumPy scalar
        return _numba_erf()(np.asarray(x))
    return cupyx_special().erf(x)
