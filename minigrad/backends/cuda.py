"""`mg.backends.cuda`: whether minigrad's GPU backend is installed, and PyTorch's cuBLAS
switches (`matmul`) with the float32 matmul precision they share.

minigrad's float32 matmuls run in full float32 on both devices whatever these say (CuPy
uses TF32 only when the environment sets CUPY_TF32=1 before it loads), and its float16
matmuls are NumPy's and CuPy's; the switches are read back as set.
"""
from __future__ import annotations

import importlib.util

from minigrad.backend import fake_gpu_requested

# PyTorch's precisions of float32 matmuls: "highest" is full float32, "high" allows TF32
# (or three bfloat16 products), "medium" one bfloat16 product
PRECISIONS = ("highest", "high", "medium")


class CublasSettings:
    """`mg.backends.cuda.matmul`: allow_tf32 (False; True means the precision is not
    "highest", as in PyTorch), allow_fp16_reduced_precision_reduction and
    allow_bf16_reduced_precision_reduction (True). Bools only; no other attributes."""

    __slots__ = ("_float32_precision", "_fp16_reduction", "_bf16_reduction")

    def __init__(self):
        self._float32_precision = "highest"
        self._fp16_reduction = True
        self._bf16_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return self._float32_precision != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        self._float32_precision = "high" if _checked(value, "allow_tf32") else "highest"

    @property
    def allow_fp16_reduced_precision_reduction(self) -> bool:
        return self._fp16_reduction

    @allow_fp16_reduced_precision_reduction.setter
    def allow_fp16_reduced_precision_reduction(self, value: bool) -> None:
        self._fp16_reduction = _checked(value, "allow_fp16_reduced_precision_reduction")

    @property
    def allow_bf16_reduced_precision_reduction(self) -> bool:
        return self._bf16_reduction

    @allow_bf16_reduced_precision_reduction.setter
    def allow_bf16_reduced_precision_reduction(self, value: bool) -> None:
        self._bf16_reduction = _checked(value, "allow_bf16_reduced_precision_reduction")


matmul = CublasSettings()


def set_float32_matmul_precision(precision: str) -> None:
    """Accepted for PyTorch scripts: "highest", "high" or "medium" (read back by
    get_float32_matmul_precision and matmul.allow_tf32); minigrad's float32 matmuls stay
    full float32. Another value raises ValueError (PyTorch warns and ignores it)."""
    if precision not in PRECISIONS:
        raise ValueError(f"set_float32_matmul_precision: expected one of {PRECISIONS}, got "
                         f"{precision!r}")
    matmul._float32_precision = precision


def get_float32_matmul_precision() -> str:
    """The precision last set ("highest" at start)."""
    return matmul._float32_precision


def is_built() -> bool:
    """Whether minigrad's GPU backend is installed (CuPy, or its stand-in under
    MINIGRAD_FAKE_GPU=1); mg.cuda.is_available() says whether a GPU is usable."""
    return fake_gpu_requested() or importlib.util.find_spec("cupy") is not None


def _checked(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise RuntimeError(f"backends.cuda.matmul.{name} expects a bool, got {value!r} of "
                           f"type {type(value).__name__}")
    return value
