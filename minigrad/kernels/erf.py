"""The error function erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt, elementwise: the
reference twin in plain `xp` code and its dispatcher (the Numba kernel of kernels/cpu/erf.py
where dispatch.py and the thresholds allow).

Both compute one formula in float64 (float32 inputs are widened and the result rounded
once), with polynomials fitted for this module (weighted least squares at 300 Chebyshev
nodes, in 160-bit arithmetic), one pair per dtype:

    |x| < 1:    erf(x) = x * P(x^2)
    |x| >= 1:   erf(x) = sign(x) * (1 - exp(-a^2) * Q(a - 3.5)),  a = min(|x|, 6),
                Q(s) ~ erfc(3.5 + s) * exp((3.5 + s)^2)

Q is fitted with the weight exp(-a^2), so that the error of erfc = exp(-a^2) Q, not of Q,
is small: erf needs erfc only to its own absolute precision. At a = 6, erfc is 2e-17, below
half an ulp of 1, so every |x| >= 6 (and +-inf) gives +-1; erf(-0) = -0, NaN gives NaN.
For float64, P has degree 11 and Q degree 20: within 1 ulp of a 120-bit erf at 42,000
points of [-7, 7] and [1e-300, 1], twin and kernel. For float32, degrees 6 and 10: below
2e-9 relative error before the rounding to float32, so within 1 ulp (tests/test_erf.py).

The dispatcher: float16 is computed in float32 (as PyTorch does); CuPy arrays take
cupyx's erf; NumPy float32/float64 arrays take the Numba kernel
(MIN_SIZE["erf"]), else the twin, which is also the path on machines without Numba.
"""
from __future__ import annotations

import numpy as np

from minigrad.backend import array_module
from minigrad.backend.device import cupyx_special
from minigrad.kernels.dispatch import any_half, cpu_kernels_for, in_float32
from minigrad.kernels.thresholds import MIN_SIZE

# P: erf(x) / x as a polynomial in x^2, from degree 0 up
SMALL = (1.1283791670955126, -0.37612638903183593, 0.11283791670946516,
         -0.026866170643424187, 0.005223977608359273, -0.0008548326025302988,
         0.00012055296182552283, -1.4924758260307543e-05, 1.6447656865154593e-06,
         -1.6210067169629653e-07, 1.3726218004447581e-08, -7.806297622140089e-10)
# Q: erfc(a) * exp(a^2) as a polynomial in a - 3.5, for a in [1, 6], from degree 0 up
LARGE = (0.1552936556072001, -0.04132357783588406, 0.010661133312492639,
         -0.0026730738362081663, 0.0006526868239598237, -0.00015547190937241698,
         3.6173132342655166e-05, -8.244228957938459e-06, 1.8459472916653106e-06,
         -3.803033543503616e-07, 1.0133676964233854e-07, -2.113334798488882e-08,
         -9.17811469392403e-09, -1.0249154565748229e-08, -2.0066695336804126e-09,
         1.3469811080736506e-09, 1.3913279878637539e-09, 5.748140361127855e-10,
         1.3735317513572542e-10, 1.8427525694857684e-11, 1.129161226964584e-12)
# the same for float32 results: lower degrees, as float32 needs 1e-8, not 1e-16
SMALL_F32 = (1.1283791665100522, -0.37612628843325163, 0.11283612428244547,
             -0.026854808537196944, 0.0051900535777752955, -0.0008024354128089007,
             7.898210204997779e-05)
LARGE_F32 = (0.15528586936924474, -0.04129547584979348, 0.01114748196995688,
             -0.0008244939886530122, 0.0042244804222370605, 0.004002500577468035,
             0.003140054134916025, 0.0014995367358438183, 0.0004669163940430391,
             8.340423516721248e-05, 6.992828401024984e-06)
COEFFICIENTS = {np.dtype(np.float64): (SMALL, LARGE),
                np.dtype(np.float32): (SMALL_F32, LARGE_F32)}
SMALL_BOUND = 1.0  # |x| below this takes P
SATURATION = 6.0  # erf(x) rounds to sign(x) from here on
CENTER = 3.5  # Q's variable is a - CENTER


def erf_twin(x):
    """erf(x) by the module docstring's formula, in the array library's operations."""
    xp = array_module(x)
    small_coefficients, large_coefficients = COEFFICIENTS[x.dtype]
    wide = x.astype(np.float64, copy=False)
    a = xp.minimum(xp.abs(wide), SATURATION)
    inner = xp.clip(wide, -SMALL_BOUND, SMALL_BOUND)  # P's range: x * x cannot overflow
    small = inner * horner(small_coefficients, inner * inner)
    large = 1.0 - xp.exp(-(a * a)) * horner(large_coefficients, a - CENTER)
    out = xp.where(xp.abs(wide) < SMALL_BOUND, small, xp.copysign(large, wide))
    return out.astype(x.dtype, copy=False)


def horner(coefficients, t):
    """sum_k coefficients[k] * t**k."""
    p = coefficients[-1]
    for c in coefficients[-2::-1]:
        p = p * t + c
    return p


def erf(x):
    """erf(x), elementwise, in x's dtype (see the module docstring)."""
    if any_half(x):
        return in_float32(erf, x)
    if not isinstance(x, (np.ndarray, np.generic)):
        return cupyx_special().erf(x)  # CuPy (float16 was widened above)
    x = np.asarray(x)  # a 0-d product is a NumPy scalar
    cpu = cpu_kernels_for("erf", MIN_SIZE["erf"], x.size, x)
    if cpu is None:
        return erf_twin(x)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(x.shape, x.dtype)
    cpu.erf(flat, out.reshape(-1))
    return out
