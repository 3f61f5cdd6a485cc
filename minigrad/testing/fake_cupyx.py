"""cupyx in the CuPy stand-in (minigrad.testing.fake_cupy): the one function minigrad
uses, `cupyx.scipy.special.erf`.

CuPy's erf has the type map ('e->d', 'f->f', 'd->d'): a float16 input gives a float64
result (integers and bools go to the first loop they cast to safely). The stand-in keeps
that map, so a caller that forgets to cast back shows the wrong dtype here too.
"""
from __future__ import annotations

import math
import types

import numpy as np

from minigrad.testing.fake_cupy._functions import ufunc

_TYPE_MAP = ((np.float16, np.float64), (np.float32, np.float32), (np.float64, np.float64))
_erf_elementwise = np.frompyfunc(math.erf, 1, 1)


def _erf(x, out=None, **kwargs):
    for source, result in _TYPE_MAP:
        if np.can_cast(x.dtype, source):
            values = np.asarray(_erf_elementwise(x.astype(np.float64)), dtype=result)
            break
    else:
        raise TypeError(f"Wrong type ({x.dtype}) of arguments for cupyx_scipy_special_erf")
    if out is None:
        return values
    out[...] = values
    return out


erf = ufunc("erf", _erf_elementwise, compute=_erf)
scipy = types.SimpleNamespace(special=types.SimpleNamespace(erf=erf))
