"""Checkpoints without pickle: mg.save(obj, path) / mg.load(path).

`obj` is a nested structure of dicts (str or int keys), lists, tuples, tensors, NumPy
arrays, Python numbers, strings, booleans and None: model and optimizer state dicts,
scheduler state, RNG state, the step. The file is a safetensors file: every tensor and
array is stored under a dotted key made from its path, and the structure itself is JSON
in the header's `__metadata__["minigrad"]`, where a tensor appears as a reference to its
key. Loading parses JSON and raw little-endian arrays only, so a hostile file can be
wrong but can never run code. Writes are atomic: a temporary file in the same directory
is written, flushed, fsynced and renamed over the target.
"""
from __future__ import annotations

import json
import os
import struct
import tempfile

import numpy as np

from minigrad.tensor import Tensor, constant

FORMAT = "minigrad.checkpoint/1"
_METADATA_KEY = "minigrad"


def save(obj, path: str | os.PathLike) -> None:
    """Write `obj` to `path` atomically (GPU tensors are saved from host copies)."""
    from safetensors.numpy import save as encode_safetensors

    arrays: dict[str, np.ndarray] = {}
    structure = _encode(obj, "", arrays)
    header = json.dumps({"format": FORMAT, "structure": structure})
    payload = encode_safetensors(arrays, metadata={_METADATA_KEY: header})
    _atomic_write(os.fspath(path), payload)


def load(path: str | os.PathLike):
    """Read what save() wrote. Tensors come back as CPU tensors (move them with .to),
    NumPy arrays as arrays. Raises ValueError naming the file for anything that is not a
    complete minigrad checkpoint (a pickle, a truncated or corrupt file)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load as decode_safetensors

    path = os.fspath(path)
    with open(path, "rb") as f:
        payload = f.read()
    metadata = _read_metadata(payload, path)
    try:
        arrays = decode_safetensors(payload)
    except (SafetensorError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: corrupt checkpoint, its tensors cannot be read: "
                         f"{exc}") from exc
    try:
        header = json.loads(metadata[_METADATA_KEY])
        if header.get("format") != FORMAT:
            raise ValueError(f"unknown format {header.get('format')!r}")
        return _decode(header["structure"], arrays)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{path}: corrupt checkpoint structure: {exc}") from exc


# ----------------------------------------------------------------------------- encoding
# Every JSON object in the structure is a tagged node, so no user key can be mistaken
# for a tag: {"tensor": key}, {"array": key}, {"dict": [[k, v], ...]}, {"tuple": [...]}.


def _encode(obj, name: str, arrays: dict):
    if isinstance(obj, Tensor):
        return {"tensor": _store(obj.numpy(), name, arrays)}
    if isinstance(obj, np.ndarray):
        return {"array": _store(obj, name, arrays)}
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(f"save: dict keys must be str or int, got {key!r} at "
                                f"{name or '<root>'}")
            items.append([key, _encode(value, _join(name, key), arrays)])
        return {"dict": items}
    if isinstance(obj, list):
        return [_encode(value, _join(name, i), arrays) for i, value in enumerate(obj)]
    if isinstance(obj, tuple):
        return {"tuple": [_encode(value, _join(name, i), arrays) for i, value in enumerate(obj)]}
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"save: cannot store a {type(obj).__name__} at {name or '<root>'}; "
                    "expected tensors, arrays, dicts, lists, tuples, numbers, str or None")


def _join(prefix: str, key) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _store(array: np.ndarray, name: str, arrays: dict) -> str:
    """Put `array` under a unique key derived from its path; return the key."""
    key = name or "tensor"
    suffix = 1
    while key in arrays:
        suffix += 1
        key = f"{name}#{suffix}"
    # not np.ascontiguousarray: it turns 0-d arrays into 1-d ones
    arrays[key] = array if array.flags.c_contiguous else array.copy(order="C")
    return key


def _decode(node, arrays: dict):
    if isinstance(node, list):
        return [_decode(value, arrays) for value in node]
    if not isinstance(node, dict):
        return node
    (tag, value), = node.items()
    if tag == "tensor":
        return constant(_writable(arrays[value]))
    if tag == "array":
        return _writable(arrays[value])
    if tag == "dict":
        return {key: _decode(item, arrays) for key, item in value}
    if tag == "tuple":
        return tuple(_decode(item, arrays) for item in value)
    raise ValueError(f"unknown node {tag!r}")


def _writable(array: np.ndarray) -> np.ndarray:
    return array if array.flags.writeable else array.copy()


# ----------------------------------------------------------------------------- file level


def _read_metadata(payload: bytes, path: str) -> dict:
    """Validate the safetensors framing (8-byte little-endian header length, JSON header)
    and return its __metadata__, or raise ValueError saying what is wrong."""
    if payload[:1] == b"\x80":
        raise ValueError(f"{path}: this is a pickle file; minigrad checkpoints never "
                         "unpickle (refusing to load it)")
    if payload[:2] == b"PK":
        raise ValueError(f"{path}: this is a zip archive (a torch.save file?), not a "
                         "minigrad checkpoint; minigrad never unpickles")
    if len(payload) < 8:
        raise ValueError(f"{path}: truncated or empty checkpoint ({len(payload)} bytes)")
    (header_length,) = struct.unpack("<Q", payload[:8])
    if header_length > len(payload) - 8:
        raise ValueError(f"{path}: truncated or corrupt checkpoint: the header claims "
                         f"{header_length} bytes but the file has {len(payload) - 8} after it")
    try:
        header = json.loads(payload[8:8 + header_length])
        metadata = header["__metadata__"]
        metadata[_METADATA_KEY]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a minigrad checkpoint (no readable minigrad "
                         f"header: {exc!r})") from exc
    return metadata


def _atomic_write(path: str, payload: bytes) -> None:
    """Write to a temporary file next to `path`, fsync it, then rename it over `path`:
    a crash at any point leaves either the old file or the new one, never half of one."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".ckpt", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
