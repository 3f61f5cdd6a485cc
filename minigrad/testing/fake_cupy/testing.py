"""cupy.testing in the stand-in: NumPy's assertions, taking device or host arrays (each
device array is copied to the host first, as CuPy's do)."""
from __future__ import annotations

import numpy as np

from minigrad.testing.fake_cupy._functions import asnumpy


def assert_allclose(actual, desired, rtol=1e-7, atol=0, err_msg="", verbose=True) -> None:
    np.testing.assert_allclose(asnumpy(actual), asnumpy(desired), rtol=rtol, atol=atol,
                               err_msg=err_msg, verbose=verbose)


def assert_array_equal(x, y, err_msg="", verbose=True, strict=False) -> None:
    np.testing.assert_array_equal(asnumpy(x), asnumpy(y), err_msg=err_msg, verbose=verbose,
                                  strict=strict)
