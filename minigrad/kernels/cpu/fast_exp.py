"""A vectorisable exp for Numba kernels.

PyPI's llvmlite ships without Intel SVML, so `np.exp` inside `@njit` is a scalar libm call
and a loop around it never vectorises. `fast_exp` is written in plain arithmetic that LLVM
turns into AVX2 code (about 3x faster than NumPy's exp on this machine):

    exp(x) = 2**n * exp(r),  n = round(x / ln 2),  r = x - n * ln 2  (|r| <= ln 2 / 2)

`n * ln 2` is subtracted in two parts (Cody-Waite) so `r` keeps full precision; `exp(r)`
is a polynomial (Cephes' minimax degree 7 for float32, Taylor degree 13 for float64) and
`2**n` is built directly in the exponent bits. Measured relative error against np.exp
(tests/test_kernels.py): below 2e-7 for float32, below 1e-15 for float64.

Contract: results below the smallest normal number are flushed to 0 (so exp(-inf) = 0);
results above the largest finite number are inf. NaN gives NaN.
"""

import numpy as np
from numba import njit, types
from numba.extending import overload

_F32_LOW = np.float32(-87.33654)  # log of the smallest normal float32
_F32_HIGH = np.float32(88.72283)  # log of the largest float32
_F64_LOW = -708.3964185322641
_F64_HIGH = 709.782712893384


def fast_exp(x):
    """exp(x) for a float32 or float64 scalar, inside @njit code only."""
    raise NotImplementedError("fast_exp is only callable from Numba-compiled code")


@njit
def _ldexp_f32(y, n):
    # y * 2**n with 2**n written into the exponent bits; n reaches 128 at the top of the
    # range, one past the largest exponent, so 2**n is applied in two halves
    half = n >> np.int32(1)
    low = np.int32((half + np.int32(127)) << np.int32(23)).view(np.float32)
    high = np.int32((n - half + np.int32(127)) << np.int32(23)).view(np.float32)
    return y * low * high


@njit
def _ldexp_f64(y, n):
    half = n >> 1
    low = np.int64((half + 1023) << 52).view(np.float64)
    high = np.int64((n - half + 1023) << 52).view(np.float64)
    return y * low * high


def _exp_f32(x):
    clamped = min(max(x, _F32_LOW), _F32_HIGH)
    n = np.floor(clamped * np.float32(1.44269504088896341) + np.float32(0.5))
    r = clamped - n * np.float32(0.693359375) - n * np.float32(-2.12194440e-4)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    y = p * r * r + r + np.float32(1.0)
    y = _ldexp_f32(y, np.int32(n))
    if x < _F32_LOW:
        y = np.float32(0.0)
    if x > _F32_HIGH:
        y = np.float32(np.inf)
    if x != x:
        y = x
    return y


def _exp_f64(x):
    clamped = min(max(x, _F64_LOW), _F64_HIGH)
    n = np.floor(clamped * 1.4426950408889634 + 0.5)
    r = clamped - n * 6.93145751953125e-1 - n * 1.42860682030941723212e-6
    # Taylor series of exp(r) to degree 13, Horner form; |r| <= 0.347 keeps it < 1 ulp
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    y = _ldexp_f64(p, np.int64(n))
    if x < _F64_LOW:
        y = 0.0
    if x > _F64_HIGH:
        y = np.inf
    if x != x:
        y = x
    return y


@overload(fast_exp)
def _fast_exp_overload(x):
    if x == types.float32:
        return _exp_f32
    if x == types.float64:
        return _exp_f64
    return None
