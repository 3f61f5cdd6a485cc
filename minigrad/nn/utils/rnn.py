"""Padded and packed batches of sequences for the recurrent modules (PyTorch's
torch.nn.utils.rnn).

A packed batch stores its sequences, longest first, time step by time step: `data` holds
step 0 of every sequence, then step 1 of every sequence still running, and so on, and
`batch_sizes[t]` says how many sequences run at step t. An RNN then does each step's work
on exactly the running sequences. `sorted_indices[j]` is the batch position of the j-th
longest sequence (None when the batch came sorted); `unsorted_indices` is its inverse.

Packing, unpacking and padding are each one gather of rows (integer-array indexing), so
gradients flow through them; the index arrays are built on the host from the lengths.
"""
from __future__ import annotations

import operator
from collections import namedtuple
from collections.abc import Sequence

import numpy as np

from minigrad import creation
from minigrad.ops import cat
from minigrad.tensor import Tensor

_Fields = namedtuple("_Fields", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_Fields):
    """(data, batch_sizes, sorted_indices, unsorted_indices), made by pack_padded_sequence
    or pack_sequence. data: (sum of lengths, *); batch_sizes: int64 on the CPU, one entry
    per time step; the indices (int64, on data's device) are None for a sorted batch."""

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same sequences with data moved or cast as Tensor.to does; the indices
        follow data's device and batch_sizes stays on the CPU, as in PyTorch."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (
            None if index is None else index.to(data.device)
            for index in (self.sorted_indices, self.unsorted_indices))
        return PackedSequence(data, self.batch_sizes, sorted_indices, unsorted_indices)


def invert_permutation(permutation: Tensor) -> Tensor:
    """The permutation q with q[permutation[i]] = i."""
    inverse = np.argsort(np.asarray(permutation.tolist(), dtype=np.int64), kind="stable")
    return creation.tensor(inverse, device=permutation.device)


def pad_sequence(sequences: Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes (L_i, *) into (max L_i, batch, *) ((batch, max L_i, *)
    with batch_first), filling the rest with padding_value; padding_side "left" puts the
    padding before each sequence."""
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"pad_sequence: Expected padding_side to be one of left or right, "
                         f"but got {padding_side}.")
    trailing = tuple(sequences[0].shape[1:])
    if any(s.ndim == 0 or tuple(s.shape[1:]) != trailing for s in sequences):
        raise RuntimeError(
            f"pad_sequence: every sequence must have a length dim followed by the first's "
            f"trailing dims {trailing}; got shapes {[tuple(s.shape) for s in sequences]}")
    lengths = np.array([s.shape[0] for s in sequences], dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    longest = int(lengths.max())
    steps = np.arange(longest)[:, None]
    if padding_side == "left":
        steps = steps - (longest - lengths)
    valid = (steps >= 0) & (steps < lengths)
    rows = cat(sequences)
    index = np.where(valid, starts + steps, rows.shape[0])
    return _padded(rows, index.T if batch_first else index, padding_value)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) ((B, T, *) with batch_first) whose sequence b has
    lengths[b] valid steps. With enforce_sorted the lengths must not increase; otherwise
    the batch is sorted first (stably, longest first) and the order kept in the result."""
    if input.ndim < 2:
        raise ValueError(f"pack_padded_sequence: input must have a time and a batch dim, got "
                         f"shape {tuple(input.shape)}")
    lengths = _lengths_list(lengths, "pack_padded_sequence")
    batch_dim = 0 if batch_first else 1
    batch, longest_possible = input.shape[batch_dim], input.shape[1 - batch_dim]
    if len(lengths) != batch:
        raise RuntimeError(f"pack_padded_sequence: Expected `len(lengths)` to be equal to "
                           f"batch_size, but got {len(lengths)} (batch_size={batch})")
    if batch == 0 or min(lengths) <= 0:
        raise RuntimeError("pack_padded_sequence: Length of all samples has to be greater "
                           "than 0, but found an element in 'lengths' that is <= 0")
    if max(lengths) > longest_possible:
        raise ValueError(f"pack_padded_sequence: lengths {lengths} exceed the {longest_possible} "
                         f"time steps of the input of shape {tuple(input.shape)}")
    lengths = np.array(lengths, dtype=np.int64)
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError(
                "pack_padded_sequence: `lengths` array must be sorted in decreasing order when "
                "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                "pack_padded_sequence and/or pack_sequence to sidestep this requirement if "
                "you do not need ONNX exportability.")
        order, sorted_indices = np.arange(batch), None
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices = creation.tensor(order, device=input.device)
    running = lengths[order][None, :] > np.arange(lengths.max())[:, None]
    # nonzero lists (step, rank) pairs step by step: the packed order
    steps, ranks = np.nonzero(running)
    batch_positions = order[ranks]
    index = (batch_positions, steps) if batch_first else (steps, batch_positions)
    data = input[tuple(creation.tensor(i) for i in index)]
    batch_sizes = creation.tensor(running.sum(axis=1))
    return PackedSequence(data, batch_sizes, sorted_indices)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths (int64, CPU)),
    in the batch order the sequences had before packing. T is the longest length, or
    total_length when given (it must be at least that)."""
    data, batch_sizes, _, unsorted_indices = sequence
    sizes = np.array(batch_sizes.tolist(), dtype=np.int64)
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                f"pad_packed_sequence: Expected total_length to be at least the length of the "
                f"longest sequence in input, but got total_length={total_length} and max "
                f"sequence length being {steps}")
        steps = total_length
    batch = int(sizes[0])
    running = np.zeros((steps, batch), dtype=bool)
    running[: len(sizes)] = np.arange(batch)[None, :] < sizes[:, None]
    index = np.full((steps, batch), data.shape[0], dtype=np.int64)
    index[running] = np.arange(data.shape[0])  # the mask is read step by step: packed order
    lengths = running.sum(axis=0)
    if unsorted_indices is not None:
        unsort = np.asarray(unsorted_indices.tolist(), dtype=np.int64)
        index, lengths = index[:, unsort], lengths[unsort]
    padded = _padded(data, index.T if batch_first else index, padding_value)
    return padded, creation.tensor(lengths)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack sequences of shapes (L_i, *) (longest first unless enforce_sorted=False)."""
    sequences = list(sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length (padding on the right)."""
    lengths = _lengths_list(lengths, "unpad_sequence")
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :length] for b, length in enumerate(lengths)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The sequences of a packed batch, in their order before packing."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def _padded(rows: Tensor, index: np.ndarray, padding_value: float) -> Tensor:
    """out[position] = rows[index[position]], where the index len(rows) stands for a row of
    padding_value: one gather, whose gradient adds each position back into its row."""
    padding = creation.full((1,) + tuple(rows.shape[1:]), padding_value, dtype=rows.dtype,
                            device=rows.device)
    return cat([rows, padding])[creation.tensor(index)]


def _lengths_list(lengths, op: str) -> list[int]:
    """Sequence lengths given as a list of ints or a 1-D integer tensor, as a list."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1 or lengths.dtype.is_floating_point:
            raise RuntimeError(f"{op}: 'lengths' argument should be a 1D integer tensor, but "
                               f"got a {lengths.ndim}D {lengths.dtype} tensor")
        return lengths.tolist()
    try:
        return [operator.index(length) for length in lengths]
    except TypeError:
        raise TypeError(f"{op}: lengths must be integers, got {lengths!r}") from None
