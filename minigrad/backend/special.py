"""Special functions that NumPy lacks: erf (for the exact GELU)."""
from __future__ import annotations

import functools
import math

import numpy as np

from minigrad.backend.device import cupyx_special


@functools.lru_cache(maxsize=1)
def _erf_ufunc():
    """math.erf as a NumPy ufunc, compiled by Numba on first use and cached on disk (in
    memory where no cache folder is writable); without Numba, math.erf element by element
    (slower, the same values)."""
    try:
        from numba import vectorize
    except ImportError:
        return _erf_by_element
    signatures = ["float32(float32)", "float64(float64)"]
    try:
        return vectorize(signatures, cache=True)(_erf_of_scalar)
    except RuntimeError as exc:
        if "cannot cache" not in str(exc):
            raise
        return vectorize(signatures)(_erf_of_scalar)


def _erf_of_scalar(x):
    return math.erf(x)


def _erf_by_element(x):
    # frompyfunc gives an object array, or a bare Python float for a 0-d input
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=x.dtype)


def erf(x):
    """The error function erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt, elementwise,
    in x's dtype."""
    if x.dtype == np.float16:
        # computed in float32: Numba's ufunc has no float16 loop, and cupyx's erf would
        # return float64 (its type map sends 'e' to 'd')
        return erf(x.astype(np.float32)).astype(np.float16)
    if isinstance(x, (np.ndarray, np.generic)):  # a 0-d product is a NumPy scalar
        return _erf_ufunc()(np.asarray(x))
    return cupyx_special().erf(x)
