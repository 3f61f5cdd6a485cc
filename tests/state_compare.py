"""`assert_identical`: two saved or loaded states are the same, bit for bit, for the
checkpoint and state-round-trip tests."""
from __future__ import annotations

import math
import struct

import numpy as np

import minigrad as mg


def assert_identical(loaded, saved, where: str = "root") -> None:
    """Same types, same keys in the same order, tensors (on the same device) and arrays
    equal bit for bit, floats equal bit for bit (NaN matches NaN)."""
    if isinstance(saved, mg.Tensor):
        assert isinstance(loaded, mg.Tensor), where
        assert (loaded.dtype, loaded.shape, loaded.device) == \
               (saved.dtype, saved.shape, saved.device), where
        assert loaded.numpy().tobytes() == saved.numpy().tobytes(), where
    elif isinstance(saved, np.ndarray):
        assert isinstance(loaded, np.ndarray), where
        assert loaded.dtype == saved.dtype and loaded.shape == saved.shape, where
        assert loaded.tobytes() == saved.tobytes(), where
    elif isinstance(saved, float):
        assert type(loaded) is float, where
        assert (math.isnan(saved) and math.isnan(loaded)) or (
            struct.pack("<d", loaded) == struct.pack("<d", saved)), where
    elif isinstance(saved, dict):
        assert isinstance(loaded, dict) and list(loaded) == list(saved), where
        for key in saved:
            assert_identical(loaded[key], saved[key], f"{where}[{key!r}]")
    elif isinstance(saved, (list, tuple)):
        assert type(loaded) is type(saved) and len(loaded) == len(saved), where
        for i, (a, b) in enumerate(zip(loaded, saved, strict=True)):
            assert_identical(a, b, f"{where}[{i}]")
    else:
        assert type(loaded) is type(saved) and loaded == saved, where
