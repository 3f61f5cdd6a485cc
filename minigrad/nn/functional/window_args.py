"""Argument checks shared by the convolution and pooling functions: sizes given as an int
or a tuple (PyTorch's `_pair`), spatial inputs with or without a batch dim, and errors
that name the op, the shapes and what was expected."""
from __future__ import annotations

import operator

from minigrad.tensor import Tensor


def size_tuple(value, dims: int, name: str, op: str, minimum: int) -> tuple[int, ...]:
    """`value` (an int, or a tuple/list of `dims` ints) as a tuple of `dims` ints, each
    at least `minimum`."""
    if isinstance(value, (tuple, list)):
        items = tuple(value)
        if len(items) != dims:
            raise ValueError(f"{op}: {name} must be an int or a tuple of {dims} ints, "
                             f"got {value!r}")
    else:
        items = (value,) * dims
    sizes = []
    for item in items:
        if isinstance(item, bool):
            raise TypeError(f"{op}: {name} must hold ints, got {value!r}")
        try:
            sizes.append(operator.index(item))
        except TypeError:
            raise TypeError(f"{op}: {name} must be an int or a tuple of {dims} ints, got "
                            f"{value!r}") from None
    if min(sizes) < minimum:
        raise ValueError(f"{op}: {name} must be at least {minimum}, got {value!r}")
    return tuple(sizes)


def batched(input: Tensor, spatial_dims: int, op: str) -> tuple[Tensor, bool]:  # noqa: A002
    """The input with a batch dim (N, C, *spatial), and whether one was added (an
    unbatched (C, *spatial) input, which PyTorch accepts too)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: expected a Tensor input, got {type(input).__name__}")
    if input.ndim not in (spatial_dims + 1, spatial_dims + 2):
        raise RuntimeError(
            f"{op}: expected a {spatial_dims + 1}-D (unbatched) or {spatial_dims + 2}-D "
            f"(batched) input, got shape {tuple(input.shape)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point input, got {input.dtype} of "
                           f"shape {tuple(input.shape)}")
    if input.ndim == spatial_dims + 1:
        return input.unsqueeze(0), True
    return input, False


def unbatched(out: Tensor, added_batch: bool) -> Tensor:
    """Drop the batch dim that `batched` added."""
    return out.squeeze(0) if added_batch else out


def describe(t: Tensor) -> str:
    return f"{tuple(t.shape)} {t.dtype} on {t.device}"
