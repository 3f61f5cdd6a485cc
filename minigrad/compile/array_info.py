"""What a capture remembers of an array once the step is done with it: its shape, dtype,
layout and device, not its memory.

A capture runs the step eagerly, and the step frees its intermediate arrays as it goes;
the capture must not keep them (that would hold every activation and every gradient of
the step at once, on top of the step's own peak). The plan is built from these records:
fusion reads shapes, dtypes, layouts and devices, and compiles each fused kernel on
small stand-ins of the same types (`stand_in`), as Numba and CuPy type arrays by dtype,
dimensions and layout (and NumPy's read-only flag), not by their sizes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ArrayInfo:
    shape: tuple
    dtype: np.dtype
    c_contiguous: bool
    f_contiguous: bool
    writeable: bool
    array_type: type  # the plain class: numpy.ndarray or a cupy.ndarray
    on_device: bool

    @classmethod
    def of(cls, array, on_device: bool) -> ArrayInfo:
        """The record of a plain (untraced) NumPy or CuPy array."""
        flags = array.flags
        return cls(tuple(array.shape), array.dtype, bool(flags.c_contiguous),
                   bool(flags.f_contiguous), bool(getattr(flags, "writeable", True)),
                   type(array), on_device)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def stand_in(self, empty):
        """A small uninitialised array of the same type to a kernel compiler: the same
        dtype and dimensions, C-contiguous, F-contiguous or strided and read-only or not as
        the array was; every dim of size 2, so that a fused kernel run on stand-ins of all
        its arrays reads and writes in bounds (a broadcast dim is read at 0). `empty`:
        numpy.empty or cupy.empty."""
        shape = (2,) * self.ndim
        if self.c_contiguous:
            array = empty(shape, self.dtype)
        elif self.f_contiguous:
            array = empty(shape, self.dtype, order="F")
        else:
            array = empty((*shape, 2), self.dtype)[..., 0]  # every other element
        if not self.writeable:
            array.flags.writeable = False
        return array
