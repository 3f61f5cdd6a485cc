"""The Numba erf kernel: kernels/erf.py's formula and polynomials, element by element, in
float64.

Contract: x and out are flat C-contiguous arrays of one size and one dtype, float32 or
float64; out = erf(x), each element computed in float64 with the polynomials of its dtype
and rounded once to it.

Performance rule: no libm call and no branch in the element loop (both polynomials are
evaluated and one result selected; fast_exp instead of exp; the polynomials unrolled at
compile time by `horner`), so LLVM vectorises it: 8 float64 lanes with AVX-512. Serial:
this is one pass of arithmetic over the array, and the other kernels found no parallel
region that paid on two cores.
"""

import math

import numpy as np
from numba import types
from numba.extending import overload

from minigrad.kernels.cpu.fast_exp import fast_exp
from minigrad.kernels.cpu.jit import kernel
from minigrad.kernels.erf import (
    CENTER,
    LARGE,
    LARGE_F32,
    SATURATION,
    SMALL,
    SMALL_BOUND,
    SMALL_F32,
)

# fused multiply-adds only: inf and NaN are part of the contract
_FASTMATH = {"contract"}


def horner(coefficients, t):
    """sum_k coefficients[k] * t**k for a tuple of constants, inside @njit code only."""
    raise NotImplementedError("horner is only callable from Numba-compiled code")


@overload(horner, jit_options={"fastmath": _FASTMATH})
def _horner_overload(coefficients, t):
    # c[0] + t * (c[1] + t * (...)): one specialisation per tuple length, so the chain is
    # straight-line code (a loop over the tuple indexes it at run time and never vectorises)
    if coefficients.count == 1:
        return lambda coefficients, t: coefficients[0]
    return lambda coefficients, t: coefficients[0] + t * horner(coefficients[1:], t)


def polynomials(x):
    """(P, Q) of kernels/erf.py for x's dtype, inside @njit code only."""
    raise NotImplementedError("polynomials is only callable from Numba-compiled code")


@overload(polynomials)
def _polynomials_overload(x):
    if x.dtype == types.float32:
        return lambda x: (SMALL_F32, LARGE_F32)
    return lambda x: (SMALL, LARGE)


@kernel(fastmath=_FASTMATH)
def erf(x, out):
    """out[i] = erf(x[i]) for every i."""
    small_coefficients, large_coefficients = polynomials(x)
    for i in range(x.size):
        value = np.float64(x[i])
        a = min(abs(value), SATURATION)
        inner = min(max(value, -SMALL_BOUND), SMALL_BOUND)
        small = inner * horner(small_coefficients, inner * inner)
        large = 1.0 - fast_exp(-(a * a)) * horner(large_coefficients, a - CENTER)
        result = small if abs(value) < SMALL_BOUND else math.copysign(large, value)
        out[i] = result if value == value else value
