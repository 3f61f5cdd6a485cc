"""x ** p, elementwise: the reference twin (the array library's `**`) and its dispatcher,
which takes faster routes on NumPy float arrays.

NumPy's pow is fast only for bases >= 0: a negative base sends the whole array down a
scalar path 60-200x slower, even where the result is finite (x ** 3 of a (32, 16, 256)
float32 activation: 10-30 ms, against 0.15 ms for |x| ** 3), and float16 has no vector
path at all. The dispatcher, for float16/32/64 NumPy arrays (float16 computed in float32,
as PyTorch does):

- a small integer exponent, p in -2..4 (the cube of GELU's tanh form, the squares of
  norms and variances): products, as PyTorch computes 2, 3, -1 and -2;
      x^0 = 1, x^1 = x, x^2 = x*x, x^3 = x*x*x, x^4 = (x*x)^2, x^-1 = 1/x, x^-2 = (1/x)^2
  Error against the exact power: 0.5 ulp for 2 and -1 (one rounding), below 1.5 ulps for
  3 and below 2.5 ulps for 4 and -2 (each product carries its factors' rounding; measured
  1.3, 1.9 and 1.9). (1/x)^2 rather than 1/(x*x) keeps -2 exact down to the subnormals
  where x*x would overflow.
- p = 0.5: sqrt(x), as `x ** 0.5` is in NumPy and PyTorch (so (-0) ** 0.5 = -0 and
  (-inf) ** 0.5 = NaN, where C's pow gives +0 and +inf); correctly rounded.
- any other exponent: the magnitude |x| ** p, which takes the vector path, and the sign
  from pow's rules for a negative base x (finite or -inf):
      p an odd integer    -> -(|x| ** p)       (-0 and -inf too: (-0) ** -3 = -inf)
      p an even integer   ->   |x| ** p        (and p = +-inf: (-1) ** inf = 1)
      p not an integer    ->   NaN for finite x < 0, |x| ** p for -inf   (and p = NaN)
  The magnitude is the twin's on |x|, bit for bit, so within its error (NumPy's vector
  pow: below 1 ulp in float32 and float64). Bases without a sign bit go to the twin as
  they are.

No Numba kernel: on |x|, NumPy's pow is a vector loop (SVML, on CPUs with AVX-512) that
beat both PyTorch's and a Numba exp(p * log|x|), which float32 must compute in float64 to
stay within 1 ulp (`python -m benchmarks.bench_ops --op pow`; on CPUs without AVX-512,
NumPy's pow is a scalar loop about 2x slower than PyTorch's).

The exponent is an array of the input's dtype (or broadcastable to it) or a Python number,
which NumPy casts to the input's dtype before computing (so is its parity here). Integer
and bool arrays, CuPy arrays and "numpy" kernel mode take the twin.
"""
from __future__ import annotations

import numpy as np

from minigrad.kernels.dispatch import KERNEL_DTYPES, in_float32
from minigrad.kernels.mode import get_mode

# the exponents computed as products of x (or of 1/x for the negative ones)
SMALL_INTEGER_EXPONENTS = (-2, -1, 0, 1, 2, 3, 4)


def is_small_integer(exponent) -> bool:
    """A Python number among SMALL_INTEGER_EXPONENTS: computed as products of x (or 1/x)
    on the fast routes."""
    return _is_number(exponent) and exponent in SMALL_INTEGER_EXPONENTS


def power_twin(x, exponent):
    """x ** exponent by the array library."""
    return x**exponent


def power(x, exponent):
    """x ** exponent, elementwise, with pow's values for every base and exponent (see the
    module docstring for the routes and their error)."""
    if not _takes_fast_routes(x):
        return power_twin(x, exponent)
    if x.dtype == np.float16:
        if _is_number(exponent):
            exponent = float(np.float16(exponent))  # the exponent NumPy and PyTorch use
        return in_float32(power, x, exponent)
    if is_small_integer(exponent):
        return _small_integer_power(x, int(exponent))
    if _is_number(exponent) and exponent == 0.5:
        return np.sqrt(x)
    return _power_by_magnitude(x, exponent)


def _takes_fast_routes(x) -> bool:
    return (type(x) is np.ndarray and get_mode() != "numpy"
            and (x.dtype in KERNEL_DTYPES or x.dtype == np.float16))


def _is_number(exponent) -> bool:
    return isinstance(exponent, (int, float)) and not isinstance(exponent, bool)


def _small_integer_power(x: np.ndarray, exponent: int) -> np.ndarray:
    """x ** exponent for exponent in SMALL_INTEGER_EXPONENTS, by products written into one
    array, which stays in the cache from pass to pass."""
    if exponent == 0:
        return np.ones_like(x)  # pow(x, 0) is 1 for every x, NaN included
    if exponent == 1:
        return x.copy()
    result = np.empty_like(x)
    base = x if exponent > 0 else np.divide(1, x, out=result)
    if exponent == -1:
        return result
    np.multiply(base, base, out=result)
    if exponent == 3:
        np.multiply(result, x, out=result)
    elif exponent == 4:
        np.multiply(result, result, out=result)
    return result


def _power_by_magnitude(x: np.ndarray, exponent) -> np.ndarray:
    """pow(x, exponent) as |x| ** exponent with the sign of a negative base put back."""
    if not np.signbit(x).any():  # no sign bit set: NumPy's pow is on its vector path
        return np.power(x, exponent)
    magnitude = np.empty(np.broadcast_shapes(x.shape, np.shape(exponent)), x.dtype)
    np.power(np.abs(x, out=magnitude), exponent, out=magnitude)
    p = np.asarray(exponent, dtype=x.dtype)  # the exponent NumPy computed with
    with np.errstate(invalid="ignore"):
        non_integer = p != np.trunc(p)  # trunc(inf) is inf; NaN is unequal to itself
        if non_integer.any():
            # NaN for a finite negative base as 0 / 0, and + 0 / 1 elsewhere: arithmetic,
            # since a masked write branches on each element (10x slower on mixed signs)
            keep = ~((x < 0) & (x > -np.inf) & non_integer)
            magnitude += np.divide(0, keep, dtype=x.dtype)
        # odd: an integer whose half is not (inf and NaN are neither; NumPy's fmod would
        # say so too, but in a scalar loop 20x slower than these vector passes)
        half = p * 0.5
        odd = (half != np.trunc(half)) & (p == np.trunc(p))
    if odd.all():
        np.copysign(magnitude, x, out=magnitude)
    elif odd.any():
        np.copysign(magnitude, x, out=magnitude, where=odd)
    return magnitude
