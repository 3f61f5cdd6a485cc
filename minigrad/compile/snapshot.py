"""Snapshot: what an array held at one moment, to compare with an array later, bit for bit
(NaNs equal wherever both hold one, whatever their payloads; -0 equal to +0, as
`np.array_equal(..., equal_nan=True)` has it).

A capture keeps the eager run's results this way until the first replay is compared with
them. For a NumPy array a snapshot is a 128-bit BLAKE2b digest of its canonical bytes
(every NaN made one NaN, -0 made +0), so checking a step that updates a model's
parameters and its optimizer's state costs no copy of them; for a CuPy array it is a
copy on the device, compared on the host once.
"""
from __future__ import annotations

import hashlib

import numpy as np

from minigrad.compile.traced_device import is_device_array


class Snapshot:
    def __init__(self, array):
        self.shape, self.dtype = array.shape, array.dtype
        if is_device_array(array):
            self._copy, self._digest = array.copy(), None
        else:
            self._copy, self._digest = None, _digest(np.asarray(array))

    def matches(self, array) -> bool:
        """Whether `array` holds what the snapshot's array held (module docstring)."""
        if is_device_array(array):
            array = array.get()
        array = np.asarray(array)
        if array.shape != self.shape or array.dtype != self.dtype:
            return False
        if self._digest is not None:
            return _digest(array) == self._digest
        want = self._copy.get()
        return np.array_equal(array, want, equal_nan=want.dtype.kind in "fc")


def _digest(array: np.ndarray) -> bytes:
    if array.dtype.kind in "fc":
        canonical = array.copy()
        canonical += array.dtype.type(0)  # -0 + 0 is +0
        canonical[np.isnan(canonical)] = np.nan  # one NaN for every payload
        array = canonical
    return hashlib.blake2b(np.ascontiguousarray(array).data, digest_size=16).digest()
