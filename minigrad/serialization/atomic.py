"""Replacing a file atomically and leaving nothing behind.

`replace_file(path, write)` has `write(file)` fill a new file in the target's folder,
fsyncs it and renames it over the target: a crash at any moment leaves the old file or
the new one, never half of one. Where Linux offers O_TMPFILE the new file has no name
while it is written, so a writer killed mid-save leaves no data behind; it is linked
under a temporary name only for the instant before the rename. That name (and the named
temporary used throughout where O_TMPFILE is missing) records the host and the process,
and every save removes the temporaries in its folder whose writer has died.

It behaves like open(path, "w") otherwise: a symlink is followed and the file it points
to replaced, a new file's mode follows the umask (0o666 & ~umask), an existing file keeps
its mode, and errors name the path the caller gave, not the temporary. Only a regular file
can be replaced: a character device (/dev/null, a tty) or a FIFO is written through, as
open() does, with no temporary and no rename (so no atomicity: a reader of the FIFO gets
the bytes as they are written), and a folder, a socket or a block device is refused
before anything is written (`writes_through`).
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import socket
import stat
from collections.abc import Callable
from typing import BinaryIO

# O_TMPFILE files are linked through /proc/self/fd; without either, use named temporaries
_UNNAMED = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")
_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:64]
_TEMPORARY = re.compile(
    r"^\..+\.minigrad-(?P<host>[A-Za-z0-9_-]*)-(?P<pid>[0-9]{1,10})-[0-9a-f]{8}\.tmp$")


def replace_file(path: str, write: Callable[[BinaryIO], None]) -> None:
    """Atomically make `path` hold what `write(file)` writes (see the module docstring)."""
    target = os.path.realpath(path)  # through symlinks: replace the file they point to
    directory = os.path.dirname(target)
    try:
        if writes_through(target):
            _write_through(target, write)
            return
        mode = _mode_of_existing(target)
        remove_stale_temporaries(directory)
        _write_then_rename(target, directory, mode, write)
    except OSError as exc:
        if exc.errno is None or exc.filename == path:
            raise
        raise type(exc)(exc.errno, exc.strerror, path) from None
    _fsync_directory(directory)


def writes_through(path: str) -> bool:
    """Whether replace_file writes through `path` rather than replacing it: True for a
    character device or a FIFO (or a symlink to one), False for a regular file or a path
    where nothing is yet. Anything else is refused with an OSError naming `path`: a folder
    (IsADirectoryError), a socket or a block device. Opens nothing, so it never blocks."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False  # nothing there: the write reports a missing or unwritable folder
    if stat.S_ISREG(mode):
        return False
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return True
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    kind = "a socket" if stat.S_ISSOCK(mode) else "a block device"  # what Linux has left
    raise OSError(errno.EINVAL, f"cannot write to {kind}: only to a regular file, a "
                                "character device or a FIFO", path)


def _write_through(target: str, write: Callable[[BinaryIO], None]) -> None:
    """open(target, "wb") without O_CREAT: a device or FIFO gone since it was checked is an
    error, never a half-written regular file. Opening a FIFO waits for its reader."""
    with os.fdopen(os.open(target, os.O_WRONLY | os.O_TRUNC), "wb") as file:
        write(file)


def remove_stale_temporaries(directory: str) -> None:
    """Delete the temporaries in `directory` left by writers on this host that have died."""
    if os.name != "posix":  # liveness by os.kill(pid, 0) is POSIX only
        return
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return  # the write that follows reports a missing or unreadable folder
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if match and match["host"] == _HOST and not _is_alive(int(match["pid"])):
            with contextlib.suppress(OSError):  # another process may clean it first
                os.remove(entry.path)


def _write_then_rename(target: str, directory: str, mode: int | None,
                       write: Callable[[BinaryIO], None]) -> None:
    fd = _open_unnamed(directory)
    temporary = None
    if fd is None:
        temporary = _temporary_name(target)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            if mode is not None:
                os.fchmod(file.fileno(), mode)
            os.fsync(file.fileno())
            if temporary is None:  # give the unnamed file a name: rename needs one
                temporary = _temporary_name(target)
                _link_unnamed(file.fileno(), temporary)
        os.replace(temporary, target)
    except BaseException:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.remove(temporary)
        raise


def _open_unnamed(directory: str) -> int | None:
    """An O_TMPFILE descriptor in `directory` (mode 0o666 less the umask), or None where
    the kernel or the file system has no unnamed files."""
    if not _UNNAMED:
        return None
    try:
        return os.open(directory, os.O_TMPFILE | os.O_WRONLY, 0o666)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None
        raise


def _link_unnamed(fd: int, name: str) -> None:
    """linkat(/proc/self/fd/FD, name, AT_SYMLINK_FOLLOW): os.link without a dir_fd calls
    link(), which would link the /proc symlink itself, not the file it stands for."""
    proc_fds = os.open("/proc/self/fd", os.O_RDONLY)
    try:
        os.link(str(fd), name, src_dir_fd=proc_fds, follow_symlinks=True)
    finally:
        os.close(proc_fds)


def _temporary_name(target: str) -> str:
    directory, name = os.path.split(target)
    # keep the whole name under NAME_MAX (255) however long the target's is
    return os.path.join(directory, f".{name[:120]}.minigrad-{_HOST}-{os.getpid()}-"
                                   f"{secrets.token_hex(4)}.tmp")


def _mode_of_existing(target: str) -> int | None:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return None


def _is_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of this process is saving
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by another user
    except OverflowError:
        return False  # no process has such an id
    return True


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX; a no-op where folders cannot be opened)."""
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
