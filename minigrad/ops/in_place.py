"""The in-place form `x.op_(...)` of an out-of-place op `op(x, ...)`.

Like every in-place op of minigrad (see indexing.inplace), the form stays outside the
graph: it computes the op without recording, writes the result into x's memory (through
any view x is) and bumps x's version counter, so a backward that saved x before the change
raises instead of using stale values. It is refused while x requires grad in grad mode.
"""
from __future__ import annotations

import functools

from minigrad.autograd.grad_mode import no_grad
from minigrad.ops.indexing import check_inplace, inplace
from minigrad.tensor_base import TensorBase


def in_place_form(function, name: str):
    """`name` (e.g. "index_add_"): x.name(*args) writes function(x, *args) into x."""

    @functools.wraps(function)
    def method(x: TensorBase, *args, **kwargs) -> TensorBase:
        check_inplace(x, name)
        with no_grad():
            result = function(x, *args, **kwargs)
        if result.dtype != x.dtype:
            raise RuntimeError(
                f"{name}: the result type {result.dtype} can't be cast to the dtype "
                f"{x.dtype} of the tensor written in place (shape {tuple(x.shape)})")
        return inplace(x, "copy", result)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {function.__name__}: writes the result into x (see in_place.py)."
    return method
