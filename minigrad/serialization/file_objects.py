"""What mg.save and mg.load take besides a path: a binary file object, as torch.save and
torch.load do (io.BytesIO(), open(path, "wb") or "rb", a file inside a zip archive).

A file object is used from its current position and left open. mg.save needs write(),
mg.load needs read() and a file it can seek in: load checks the header's lengths against
the bytes the file holds before it allocates anything, so, like torch.load, it refuses a
pipe or a socket (read such a stream into an io.BytesIO first). A text-mode file is
refused with a TypeError saying to open it in binary mode.
"""
from __future__ import annotations

import io
import os

# the io method that says whether a file was opened to read or to write
_OPENED_FOR = {"read": "readable", "write": "writable"}


def is_path(f) -> bool:
    """Whether `f` names a file (str, bytes or os.PathLike) rather than being a file object."""
    return isinstance(f, (str, bytes, os.PathLike))


def name_of(file) -> str:
    """How error messages name a file object: its `name` where that is a path (open()'s
    files have one), else its type, "<BytesIO>"."""
    name = getattr(file, "name", None)
    return name if isinstance(name, str) else f"<{type(file).__name__}>"


def check_binary(file, method: str, caller: str) -> None:
    """TypeError naming `caller` unless `file` is a binary file object that can `method`
    ("read" or "write"); io's classes also say whether they were opened for it."""
    if isinstance(file, io.TextIOBase):
        mode = "rb" if method == "read" else "wb"
        raise TypeError(f"{caller}: expected a path or a binary file object with {method}(), "
                        f"got a text-mode {type(file).__name__}: a checkpoint is bytes, so "
                        f"open the file with {mode!r} (or use io.BytesIO)")
    opened_for = getattr(file, _OPENED_FOR[method], None)
    if not callable(getattr(file, method, None)) or (callable(opened_for) and not opened_for()):
        raise TypeError(f"{caller}: expected a path or a binary file object with {method}(), "
                        f"got {type(file).__name__}")


def check_seekable(file, name: str) -> None:
    """io.UnsupportedOperation (an OSError and a ValueError) naming the file unless load can
    find its end and come back, as reading checks lengths against the bytes there."""
    try:
        position = file.tell()
        file.seek(0, os.SEEK_END)
        file.seek(position)
    except (AttributeError, OSError, ValueError):
        raise io.UnsupportedOperation(
            f"{name}: mg.load reads only files it can seek in (as torch.load does); read "
            "this one into a buffer first: mg.load(io.BytesIO(file.read()))") from None
