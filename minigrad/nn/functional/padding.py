"""F.pad: padding (or, with negative amounts, cropping) the last dims of a tensor."""
from __future__ import annotations

from minigrad.ops.padding import ConstantPadNd
from minigrad.tensor import Tensor, constant

_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    """Pad the last len(pad) // 2 dims, PyTorch's order: pad = (left, right) for the last
    dim, then (top, bottom) for the one before it, and so on. A negative amount crops.

    mode "constant" fills with `value` (0 by default), any input; "reflect" mirrors
    without repeating the edge ([1, 2, 3] -> [3, 2, 1, 2, 3, 2, 1] for (2, 2)),
    "replicate" repeats the edge, "circular" wraps around. Those three pad 1, 2 or 3 dims
    of an input with one or two leading (batch, channel) dims more, as in PyTorch."""
    amounts = _amounts(input, pad, mode)
    if mode == "constant":
        return _constant(input, amounts, 0.0 if value is None else value)
    if value not in (None, 0, 0.0):
        raise ValueError(f"pad: value applies to mode 'constant' only, got mode {mode!r}")
    out = input
    for dim, (before, after) in amounts.items():
        out = out.index_select(dim, constant(_source_positions(out, dim, before, after, mode)))
    return out


def _amounts(input: Tensor, pad, mode: str) -> dict:
    """{dim: (before, after)} from PyTorch's flat pad tuple, checked."""
    if mode not in _MODES:
        raise ValueError(f"pad: mode must be one of {_MODES}, got {mode!r}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise ValueError(f"pad: the pad tuple needs an even length (before, after per dim), "
                         f"got {pad}")
    count = len(pad) // 2
    if count > input.ndim:
        raise ValueError(f"pad: {pad} pads {count} dims but the input has shape "
                         f"{tuple(input.shape)}")
    if mode != "constant" and (count > 3 or input.ndim not in (count + 1, count + 2)):
        raise NotImplementedError(
            f"pad: mode {mode!r} pads the last 1, 2 or 3 dims of an input with one or two "
            f"more dims (batch, channel); got pad {pad} for shape {tuple(input.shape)}"
        )
    amounts = {input.ndim - 1 - k: (pad[2 * k], pad[2 * k + 1]) for k in range(count)}
    for dim, (before, after) in amounts.items():
        size = input.shape[dim]
        if size + before + after < 0:
            raise ValueError(f"pad: {(before, after)} leaves dim {dim} of size {size} "
                             f"(input shape {tuple(input.shape)}) with a negative size")
        # reflect mirrors the whole dim; circular wraps what is left after cropping
        limit = size - 1 if mode == "reflect" else size + min(before, 0) + min(after, 0)
        if mode in ("reflect", "circular") and max(before, after) > limit:
            raise ValueError(
                f"pad: mode {mode!r} pads at most {limit} elements on a side of dim {dim} "
                f"of size {size}, got {(before, after)} (input shape {tuple(input.shape)})"
            )
        if mode == "replicate" and size == 0 and max(before, after) > 0:
            raise ValueError(f"pad: mode 'replicate' cannot pad the empty dim {dim}")
    return amounts


def _constant(input: Tensor, amounts: dict, value) -> Tensor:
    # negative amounts crop first; the rest is padding
    crop = [slice(None)] * input.ndim
    for dim, (before, after) in amounts.items():
        crop[dim] = slice(max(-before, 0), input.shape[dim] - max(-after, 0))
    cropped = input[tuple(crop)] if any(min(a) < 0 for a in amounts.values()) else input
    widths = [(0, 0)] * input.ndim
    for dim, (before, after) in amounts.items():
        widths[dim] = (max(before, 0), max(after, 0))
    if not any(before or after for before, after in widths):
        return cropped
    return ConstantPadNd.apply(cropped, widths=tuple(widths), value=value)


def _source_positions(input: Tensor, dim: int, before: int, after: int, mode: str):
    """For each position of the padded dim, the input position it copies (PyTorch's
    rules: reflect and replicate read the whole dim, negative amounts cropping the result;
    circular crops first and wraps around what is left)."""
    xp = input.xp
    size = input.shape[dim]
    if mode == "circular":
        start, kept = max(-before, 0), size + min(before, 0) + min(after, 0)
        positions = xp.arange(-max(before, 0), kept + max(after, 0))
        return (positions % max(kept, 1) + start).astype(xp.int64)
    positions = xp.arange(-before, size + after)
    if mode == "reflect":
        positions = xp.abs(positions)  # mirror at 0 ...
        positions = (size - 1) - xp.abs((size - 1) - positions)  # ... and at size - 1
    else:
        positions = xp.clip(positions, 0, size - 1)
    return positions.astype(xp.int64)
