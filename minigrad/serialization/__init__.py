"""Checkpoints without pickle: mg.save(obj, f) / mg.load(f, map_location=None).

`obj` is a nested structure of dicts (str or int keys), lists, tuples, tensors, NumPy
arrays, Python numbers, strings, booleans and None: model and optimizer state dicts,
scheduler state, RNG state, the step. The file is a plain safetensors file: every tensor
and array is stored under a dotted key made from its path ("model.0.weight"), and the
structure itself is JSON in the header's `__metadata__["minigrad"]`, where a tensor
appears as a reference to its key (structure.py). Loading parses JSON and raw
little-endian arrays only, validating every field first (safetensors_file.py), so a
hostile file can be refused but can never run code or make load allocate more than the
file holds. A safetensors file written by another tool (safetensors.torch.save_file, say)
loads as a flat {name: tensor} dict. Saving to a path replaces the file atomically and
leaves no temporary behind, even when killed; a character device or a FIFO is written
through, as open() does (atomic.py). `f` may also be a binary file object, as in
torch.save and torch.load (io.BytesIO, open(path, "wb") or "rb"): each checkpoint is
written at its position and read from there, one after another (file_objects.py).
"""
from __future__ import annotations

import json
import os
from typing import BinaryIO

import numpy as np

from minigrad import dtypes
from minigrad.backend import Device, as_device, cuda_unavailable_reason, to_device
from minigrad.backend.device import CPU
from minigrad.serialization import file_objects, safetensors_file, structure
from minigrad.serialization.atomic import replace_file
from minigrad.serialization.json_checks import loads_checked
from minigrad.tensor import Tensor, constant

FORMAT = "minigrad.checkpoint/1"
_METADATA_KEY = "minigrad"
_INT64_MAX = np.iinfo(np.int64).max
_MINIGRAD_NUMPY_DTYPES = frozenset(d.np for d in dtypes.ALL)
_NEVER_UNPICKLES = "minigrad never unpickles, since loading a pickle can run arbitrary code"
_CONVERT_TORCH_FILE = ("To use a PyTorch state dict, convert it where PyTorch is installed: "
                       "safetensors.torch.save_file(torch.load(path, weights_only=True), "
                       "'model.safetensors'), then mg.load('model.safetensors')")


def save(obj, f: str | os.PathLike | BinaryIO) -> None:
    """Write `obj` to `f`, a path or a binary file object, as torch.save does. A path's file
    is replaced atomically (a character device or a FIFO is written through); a file
    object gets the checkpoint at its position, is flushed and is left open, just after
    it. GPU tensors are saved from host copies and load back onto the GPU unless load's
    map_location says otherwise. OSError naming the path if it cannot be written,
    TypeError if `f` is neither a path nor a binary file object with write()."""
    to_path = file_objects.is_path(f)
    if not to_path:
        file_objects.check_binary(f, "write", "mg.save")
    arrays: dict[str, np.ndarray] = {}
    header = json.dumps({"format": FORMAT, "structure": structure.encode(obj, arrays)})

    def write(file: BinaryIO) -> None:
        safetensors_file.write(file, arrays, {_METADATA_KEY: header})

    if to_path:
        replace_file(os.fsdecode(f), write)
        return
    write(f)
    if callable(getattr(f, "flush", None)):
        f.flush()


def load(f: str | os.PathLike | BinaryIO, map_location=None, *,
         weights_only: bool | None = None):
    """Read a checkpoint that save() wrote, or any safetensors file, from `f`: a path, or a
    seekable binary file object (as torch.load takes), read from its position and left
    just after the checkpoint, so that checkpoints saved one after another into one
    stream load one after another; a file object holding something else is refused and
    left where it was.

    A load is always what PyTorch calls weights_only: tensors and plain data, never a
    pickle. weights_only=True (PyTorch's default) is accepted; False is refused.

    Tensors come back where they were saved from, or where `map_location` puts them:
    "cpu", "gpu" (aliases "cuda", "cuda:0"), a Device, or a dict mapping saved devices to
    devices ({"gpu": "cpu"}); NumPy arrays stay arrays. A safetensors file written by
    another tool loads as a flat {name: tensor} dict on the CPU (or on map_location),
    with its names unchanged; uint16, uint32 and uint64 widen to int64 and bfloat16 to
    float32, exactly. Raises ValueError naming the file and the problem for anything
    else (a pickle, a zip, a truncated or corrupt file), OSError if it cannot be read
    (io.UnsupportedOperation, a ValueError too, for a pipe or any file it cannot seek in),
    TypeError if `f` is neither a path nor a binary file object with read(), RuntimeError
    if a tensor must go to a GPU this machine does not have.
    """
    if weights_only is False:
        raise ValueError(f"load: weights_only=False asks to unpickle arbitrary objects; "
                         f"{_NEVER_UNPICKLES}. A minigrad checkpoint holds tensors and plain "
                         "data only: load it without weights_only")
    placement = _Placement(map_location)
    if file_objects.is_path(f):
        name = os.fsdecode(f)
        with open(name, "rb") as file:
            metadata, arrays = _read(file, name, whole_file=True)
    else:
        file_objects.check_binary(f, "read", "mg.load")
        name = file_objects.name_of(f)
        metadata, arrays = _read(f, name, whole_file=False)
    return _rebuild(metadata, arrays, placement, name)


def add_safe_globals(safe_globals: list) -> None:
    """Refused: in PyTorch, the classes torch.load may unpickle. minigrad never unpickles,
    so there is nothing to allow; rebuild such objects from saved tensors and plain data."""
    raise RuntimeError(_safe_globals_refusal("add_safe_globals"))


def safe_globals(safe_globals: list):
    """Refused: PyTorch's context manager form of add_safe_globals (see there)."""
    raise RuntimeError(_safe_globals_refusal("safe_globals"))


def _safe_globals_refusal(name: str) -> str:
    return (f"serialization.{name}: safe globals are the classes PyTorch's torch.load may "
            f"unpickle, and {_NEVER_UNPICKLES}: a checkpoint holds tensors, arrays, numbers, "
            "strings and containers of them. Save objects as such data (a model's "
            "state_dict()) and rebuild them after mg.load")


def _read(file: BinaryIO, name: str, *,
          whole_file: bool) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """safetensors_file.read, naming torch.save's formats where `file` holds one instead."""
    file_objects.check_seekable(file, name)
    start = file.tell()
    try:
        return safetensors_file.read(file, name, whole_file=whole_file)
    except ValueError:
        file.seek(start)
        magic = file.read(2)
        file.seek(start)
        _refuse_other_formats(magic, name)
        raise


def _refuse_other_formats(magic: bytes, name: str) -> None:
    """Name pickles and zip archives (torch.save's formats) by a file's first two bytes."""
    if magic[:1] == b"\x80":
        raise ValueError(f"{name}: this is a pickle file; {_NEVER_UNPICKLES}, so it refuses "
                         f"to load it. {_CONVERT_TORCH_FILE}")
    if magic == b"PK":
        raise ValueError(f"{name}: this is a zip archive (a torch.save file?), not a "
                         f"safetensors checkpoint; {_NEVER_UNPICKLES}. {_CONVERT_TORCH_FILE}")


def _rebuild(metadata: dict[str, str], arrays: dict[str, np.ndarray], placement: _Placement,
             name: str):
    """The object a file's metadata and arrays hold: the saved structure, or a flat dict of
    tensors for a safetensors file that minigrad did not write."""
    if _METADATA_KEY not in metadata:
        return {key: placement.tensor(array, key, "cpu", name)
                for key, array in sorted(arrays.items())}
    header = loads_checked(metadata[_METADATA_KEY], max_depth=structure.MAX_JSON_DEPTH,
                           allow_nan=True, what=f"{name}: the minigrad structure")
    if not (isinstance(header, dict) and set(header) == {"format", "structure"}
            and header["format"] == FORMAT):
        found = header.get("format") if isinstance(header, dict) else None
        raise ValueError(f"{name}: expected a {FORMAT!r} structure, found format {found!r}")

    def make_tensor(array, key, device):
        return placement.tensor(array, key, device, name)

    try:
        return structure.decode(header["structure"], arrays, make_tensor)
    except ValueError as exc:
        if str(exc).startswith(name):
            raise
        raise ValueError(f"{name}: corrupt checkpoint structure: {exc}") from None


class _Placement:
    """Where each loaded tensor goes: map_location resolved once, up front."""

    def __init__(self, map_location) -> None:
        if map_location is None:
            self.mapping = {}
        elif isinstance(map_location, dict):
            self.mapping = {_saved_device(saved, map_location): _device(target, map_location)
                            for saved, target in map_location.items()}
        else:
            target = _device(map_location, map_location)
            self.mapping = {"cpu": target, "gpu": target}

    def tensor(self, array: np.ndarray, key: str, saved_device: str, path: str) -> Tensor:
        array = _tensor_array(array, key, path)
        device = self.mapping.get(saved_device)
        if device is None:
            if saved_device == "gpu" and cuda_unavailable_reason():
                raise RuntimeError(
                    f"{path}: tensor {key!r} was saved from the GPU, but this machine "
                    f"cannot use one ({cuda_unavailable_reason()}); pass map_location='cpu'")
            device = CPU if saved_device == "cpu" else as_device("gpu")
        return constant(array if device == CPU else to_device(array, device))


def _device(location, map_location) -> Device:
    """The Device a location of map_location names (RuntimeError for an unusable GPU)."""
    return as_device(_saved_device(location, map_location))


def _saved_device(location, map_location) -> str:
    """'cpu' or 'gpu' (the file's names) for a location of map_location, or a clear error."""
    if not isinstance(location, (Device, str)):
        raise TypeError(f"load: map_location must be 'cpu', 'gpu', a Device or a dict of "
                        f"them, got {map_location!r}")
    try:
        device = Device(location.lower() if isinstance(location, str) else location)
    except RuntimeError:
        raise ValueError(f"load: unknown map_location {location!r}: expected 'cpu' or 'gpu' "
                         "(aliases 'cuda', 'cuda:0') or a Device") from None
    return "cpu" if device.type == "cpu" else "gpu"


def _tensor_array(array: np.ndarray, key: str, path: str) -> np.ndarray:
    """`array` in the minigrad dtype that holds it exactly (uint16, uint32 and uint64 widen
    to int64), or ValueError for uint64 values beyond int64."""
    if array.dtype in _MINIGRAD_NUMPY_DTYPES:
        return array
    if array.dtype == np.uint64 and array.size and array.max() > _INT64_MAX:
        raise ValueError(f"{path}: tensor {key!r} holds uint64 values beyond int64, the "
                         "widest integer minigrad has")
    return array.astype(dtypes.from_numpy(array.dtype).np)
