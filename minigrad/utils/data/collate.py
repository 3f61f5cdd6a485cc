"""Turning samples into batches: `default_collate` (what a DataLoader does with a list of
samples) and `default_convert` (what it does to single samples when batching is off),
with PyTorch's rules."""
from __future__ import annotations

import collections.abc
from collections.abc import Sequence

import numpy as np

from minigrad import dtypes
from minigrad.ops import stack
from minigrad.tensor import Tensor

_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
          "lists; found {}")


def default_collate(batch: Sequence):
    """Stack a list of samples into a batch, by the type of the first sample:

    - tensors are stacked along a new first dimension; NumPy arrays and NumPy scalars
      become tensors first (arrays of strings or objects are refused);
    - Python floats become a float64 tensor, ints an int64 tensor, bools a bool tensor;
    - strings and bytes stay as they came (the list, or the tuple of a transposed
      sequence);
    - a dict collates each key, a namedtuple each field; any other sequence (a tuple
      too) is transposed and each position collated, giving a list: (x, y) samples
      give [xs, ys].
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray) and elem.ndim > 0:
        _check_numeric(elem)
        return stack([Tensor(np.asarray(sample)) for sample in batch], 0)
    if isinstance(elem, np.generic) or isinstance(elem, np.ndarray):
        _check_numeric(np.asarray(elem))
        return Tensor(np.asarray(batch))
    if isinstance(elem, float):
        return Tensor(batch, dtype=dtypes.float64)
    if isinstance(elem, int):  # bool included: [True, False] gives a bool tensor
        return Tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([sample[key] for sample in batch]) for key in elem}
        return _same_type(elem, collated)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(field) for field in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               f"equal size, got sizes {[len(sample) for sample in batch]}")
        collated = [default_collate(position) for position in zip(*batch)]
        return collated if isinstance(elem, tuple) else _same_type(elem, collated)
    raise TypeError(_ERROR.format(type(elem)))


def default_convert(data):
    """What a DataLoader without batching does to each sample: NumPy arrays and scalars
    become tensors (inside dicts and sequences too); everything else is kept."""
    if isinstance(data, (np.ndarray, np.generic)) and np.asarray(data).dtype.kind not in "SUO":
        return Tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _same_type(data, {key: default_convert(value) for key, value in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(value) for value in data))
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        converted = [default_convert(value) for value in data]
        return converted if isinstance(data, tuple) else _same_type(data, converted)
    return data


def _check_numeric(array: np.ndarray) -> None:
    if array.dtype.kind in "SUO":  # strings and objects cannot become tensors
        raise TypeError(_ERROR.format(array.dtype))


def _same_type(original, values):
    """`values` as the type of `original` where that type can be built from it (a dict
    subclass, a list subclass), else as is."""
    try:
        return type(original)(values)
    except TypeError:
        return values
