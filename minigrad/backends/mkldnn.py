"""`mg.backends.mkldnn`: oneDNN (MKL-DNN), which minigrad does not use: its CPU ops are
NumPy's and its own Numba kernels' (is_available() is False)."""
from __future__ import annotations


def is_available() -> bool:
    return False
