"""The safetensors layout, read and written without the safetensors package.

    8 bytes    N, the header's length, an unsigned little-endian integer
    N bytes    a JSON object: {name: {"dtype": "F32", "shape": [2, 3],
               "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}
    the rest   the tensors' bytes, little-endian, C order; offsets count from here

Reading starts at a seekable file object's position and validates every field before it
allocates anything: the header length against the bytes the file holds from there, the
JSON (its nesting depth too), each entry's dtype, shape and offsets, and that the tensors
tile the data exactly, with no hole or overlap. A file on disk may hold nothing after
them (as the format requires, so a file cannot hide a second payload); in a stream, what
follows is left for the next read. Each tensor is then read into its own array; nothing
is executed and no memory beyond the bytes the file holds is taken.
Writing puts the tensors in order of decreasing item size after a header padded to a
multiple of 8 bytes, so every tensor starts aligned, as the safetensors library does.
"""
from __future__ import annotations

import json
import os
import struct
from typing import BinaryIO

import numpy as np

from minigrad.serialization.json_checks import loads_checked

# the safetensors library refuses larger headers; so do we, so that either reads our files
MAX_HEADER_BYTES = 100_000_000
METADATA_KEY = "__metadata__"
_ENTRY_FIELDS = {"dtype", "shape", "data_offsets"}
# deepest legal header: {name: {"shape": [..]}}; anything deeper is not safetensors
_HEADER_DEPTH = 3
_MAX_NDIM = 64  # NumPy's limit

_NUMPY_OF = {
    "BOOL": np.dtype("bool"),
    "U8": np.dtype("<u1"), "I8": np.dtype("<i1"),
    "U16": np.dtype("<u2"), "I16": np.dtype("<i2"),
    "U32": np.dtype("<u4"), "I32": np.dtype("<i4"),
    "U64": np.dtype("<u8"), "I64": np.dtype("<i8"),
    "F16": np.dtype("<f2"), "F32": np.dtype("<f4"), "F64": np.dtype("<f8"),
    "BF16": np.dtype("<u2"),  # read as raw bits, widened to float32 below
}
_NAME_OF = {dtype.newbyteorder("="): name for name, dtype in _NUMPY_OF.items()
            if name != "BF16"}
# dtypes of the format that no NumPy dtype holds exactly
_UNSUPPORTED = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64")


def safetensors_dtype(dtype: np.dtype) -> str:
    """The format's name for a NumPy dtype ('F32' for float32), or TypeError."""
    name = _NAME_OF.get(dtype.newbyteorder("="))
    if name is None:
        raise TypeError(f"save: cannot store {dtype} arrays; safetensors holds bool, "
                        "(u)int8-64 and float16/32/64")
    return name


def write(file: BinaryIO, arrays: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    """Write `arrays` (names -> C-contiguous arrays of supported dtypes) and `metadata`."""
    order = sorted(arrays, key=lambda name: (-arrays[name].dtype.itemsize, name))
    header: dict = {METADATA_KEY: metadata}
    offset = 0
    for name in order:
        array = arrays[name]
        header[name] = {"dtype": safetensors_dtype(array.dtype), "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("ascii")
    text += b" " * (-len(text) % 8)  # pad so that the data, and every tensor, is aligned
    if len(text) > MAX_HEADER_BYTES:
        raise ValueError(f"save: the header would take {len(text)} bytes, more than the "
                         f"{MAX_HEADER_BYTES} safetensors readers accept")
    file.write(struct.pack("<Q", len(text)))
    file.write(text)
    for name in order:
        array = arrays[name]
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        file.write(array.reshape(-1).view(np.uint8).data)


def read(file: BinaryIO, name: str, *,
         whole_file: bool) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """(metadata, {tensor name: array}) of the safetensors file at `file`'s position, a
    seekable file object that `name` names in errors; arrays in native byte order (BF16
    widened exactly to float32). Reads exactly its bytes, leaving `file` just after them:
    with whole_file anything there is refused (a file on disk holds one checkpoint),
    without it is left for the next read (a stream may hold several). Raises ValueError
    naming `name` and what is wrong for anything that is not a well-formed safetensors
    file, OSError if it cannot be read."""
    start = file.tell()
    size = file.seek(0, os.SEEK_END) - start
    file.seek(start)
    header_length = _header_length(_read_exactly(file, 8), size, name)
    raw_header = _read_exactly(file, header_length)
    if len(raw_header) != header_length:
        raise ValueError(f"{name}: truncated while reading (the file shrank)")
    header = _parse_header(raw_header, name)
    metadata = _metadata(header.pop(METADATA_KEY, {}), name)
    entries = _entries(header, size - 8 - header_length, whole_file, name)
    # the tensors tile the data in this order, so each one's bytes follow the last one's
    arrays = {key: _read_array(file, key, entry, name) for key, entry in entries}
    return metadata, arrays


def _header_length(prefix: bytearray, size: int, path: str) -> int:
    if len(prefix) < 8:
        raise ValueError(f"{path}: truncated or empty ({size} bytes): a safetensors file "
                         "starts with an 8-byte header length")
    (length,) = struct.unpack("<Q", prefix)
    if length > size - 8:
        raise ValueError(f"{path}: truncated or not a safetensors file: the header length "
                         f"field says {length} bytes, the file has {size - 8} after it")
    if length > MAX_HEADER_BYTES:
        raise ValueError(f"{path}: a header of {length} bytes is larger than safetensors "
                         f"allows ({MAX_HEADER_BYTES})")
    return length


def _parse_header(raw: bytearray, path: str) -> dict:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: the header is not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start})") from None
    header = loads_checked(text, max_depth=_HEADER_DEPTH, allow_nan=False,
                           what=f"{path}: the header")
    if not isinstance(header, dict):
        raise ValueError(f"{path}: the header is a JSON {type(header).__name__}, not an object")
    return header


def _metadata(metadata, path: str) -> dict[str, str]:
    if not isinstance(metadata, dict) or not all(
            isinstance(value, str) for value in metadata.values()):
        raise ValueError(f"{path}: {METADATA_KEY} must map strings to strings")
    return metadata


def _entries(header: dict, data_size: int, whole_file: bool,
             path: str) -> list[tuple[str, dict]]:
    """The header's tensors in file order, each checked, and checked to tile the data from
    its start: all of the `data_size` bytes there with whole_file, else a prefix of them."""
    entries = [(name, _checked_entry(name, entry, path)) for name, entry in header.items()]
    entries.sort(key=lambda item: item[1]["data_offsets"])
    position = 0
    for name, entry in entries:
        begin, end = entry["data_offsets"]
        if begin != position:
            problem = "overlaps the one before" if begin < position else "leaves a gap before it"
            raise ValueError(f"{path}: tensor {name!r} starts at data byte {begin} and "
                             f"{problem} (which ends at {position})")
        position = end
    if position > data_size or (whole_file and position < data_size):
        state = "truncated" if position > data_size else "corrupt"
        raise ValueError(f"{path}: {state}: the tensors take {position} bytes of data, the "
                         f"file holds {data_size}")
    return entries


def _checked_entry(name: str, entry, path: str) -> dict:
    where = f"{path}: tensor {name!r}"
    if not isinstance(entry, dict) or set(entry) != _ENTRY_FIELDS:
        raise ValueError(f"{where}: expected an object with the fields dtype, shape and "
                         f"data_offsets, got {_short(entry)}")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype in _UNSUPPORTED:
        raise ValueError(f"{where}: dtype {dtype} has no minigrad or NumPy equivalent")
    if dtype not in _NUMPY_OF:
        raise ValueError(f"{where}: unknown dtype {_short(dtype)}")
    if not (isinstance(shape, list) and len(shape) <= _MAX_NDIM
            and all(_is_count(n) for n in shape)):
        raise ValueError(f"{where}: the shape must be a list of at most {_MAX_NDIM} "
                         f"non-negative integers, got {_short(shape)}")
    # NumPy refuses such shapes even when a zero makes the tensor empty
    if _NUMPY_OF[dtype].itemsize * int(np.prod([max(n, 1) for n in shape], dtype=object)) >= 2**62:
        raise ValueError(f"{where}: shape {_short(shape)} is too large for any array")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))
            and offsets[0] <= offsets[1]):
        raise ValueError(f"{where}: data_offsets must be [begin, end] with 0 <= begin <= "
                         f"end, got {_short(offsets)}")
    expected = _NUMPY_OF[dtype].itemsize * int(np.prod(shape, dtype=object))
    if offsets[1] - offsets[0] != expected:
        raise ValueError(f"{where}: a {dtype} tensor of shape {tuple(shape)} takes "
                         f"{expected} bytes, its offsets span {offsets[1] - offsets[0]}")
    return entry


def _read_array(file: BinaryIO, name: str, entry: dict, path: str) -> np.ndarray:
    dtype = _NUMPY_OF[entry["dtype"]]
    begin, end = entry["data_offsets"]
    array = np.empty(entry["shape"], dtype=dtype)
    if _fill(file, array.reshape(-1).view(np.uint8).data) != end - begin:
        raise ValueError(f"{path}: truncated while reading tensor {name!r}")
    if entry["dtype"] == "BF16":
        # bfloat16 is the top half of a float32: widening it is exact
        return (array.astype(np.uint32) << 16).view(np.float32)
    if entry["dtype"] == "BOOL" and array.view(np.uint8).max(initial=0) > 1:
        raise ValueError(f"{path}: tensor {name!r} is BOOL but holds bytes other than 0 and 1")
    return array.astype(dtype.newbyteorder("="), copy=False)


def _read_exactly(file: BinaryIO, count: int) -> bytearray:
    """The next `count` bytes of `file`, fewer only where it ends."""
    data = bytearray(count)
    with memoryview(data) as view:
        filled = _fill(file, view)
    del data[filled:]
    return data


def _fill(file: BinaryIO, buffer: memoryview) -> int:
    """Read into `buffer` until it is full or `file` ends; return the bytes read. Loops, as
    an unbuffered file may return fewer bytes than asked for before its end; uses read()
    where a file object has no readinto()."""
    filled = 0
    while filled < len(buffer):
        if hasattr(file, "readinto"):
            count = file.readinto(buffer[filled:]) or 0
        else:
            chunk = file.read(len(buffer) - filled)
            buffer[filled:filled + len(chunk)] = chunk
            count = len(chunk)
        if count == 0:
            return filled
        filled += count
    return filled


def _is_count(value) -> bool:
    return type(value) is int and value >= 0


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
