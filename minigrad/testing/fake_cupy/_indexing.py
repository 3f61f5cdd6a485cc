"""Indices into stand-in arrays, with CuPy's rules (cupy/_core/_routines_indexing.pyx):
lists and host arrays in an index are copied to the device (allowed, unlike host values
in arithmetic), and integer arrays wrap around out-of-range entries instead of raising,
as CuPy's take and scatter kernels do; a scalar index out of range still raises.
During a stream capture, a host index (a copy to the device) and a boolean mask (CuPy
reads the count of True back to the host) raise CuPy's RuntimeError.
"""
from __future__ import annotations

import numpy as np

from minigrad.testing.fake_cupy._capture import D2H, H2D, refuse_transfer


def device_index(index, shape: tuple):
    """`index` ready for NumPy: device arrays as host memory, lists and host arrays as
    index arrays (CuPy copies them to the device), integer arrays wrapped into range
    along their axis; a basic index keeps a view (a 0-d view for single elements)."""
    parts = index if type(index) is tuple else (index,)
    parts = tuple(_index_part(p) for p in parts)
    if not any(isinstance(p, np.ndarray) for p in parts):
        return parts if Ellipsis in parts else parts + (Ellipsis,)
    return _wrap_integer_arrays(parts, shape)


def _index_part(part):
    if hasattr(part, "_host"):  # a stand-in array
        part = part._host
        if part.dtype == np.bool_:
            refuse_transfer(D2H)
    elif isinstance(part, (list, np.ndarray)):
        refuse_transfer(H2D)
        part = np.asarray(part)
        if part.size == 0 and part.dtype.kind == "f":
            part = part.astype(np.int64)  # an empty list means no indices, not a mask
    else:
        return part
    if part.dtype.kind not in "biu":
        raise IndexError("arrays used as indices must be of integer or boolean type "
                         f"(actual: {part.dtype.type})")
    return part


def _wrap_integer_arrays(parts: tuple, shape: tuple) -> tuple:
    def width(p):
        if p is None or p is Ellipsis:
            return 0
        return p.ndim if isinstance(p, np.ndarray) and p.dtype == np.bool_ else 1

    explicit = sum(width(p) for p in parts)
    axis, wrapped = 0, []
    for part in parts:
        if part is Ellipsis:
            axis += len(shape) - explicit
        elif isinstance(part, np.ndarray) and part.dtype.kind in "iu":
            if axis < len(shape) and shape[axis] > 0:
                part = part % shape[axis]  # CuPy's take and scatter kernels wrap
        axis += width(part)
        wrapped.append(part)
    return tuple(wrapped)
