"""Saving to something that is not a regular file: a character device or a FIFO is written
through, as open() does (the device stays a device, a FIFO's reader gets the checkpoint),
and a socket or a block device is refused before anything is written, by mg.save and by
the command line's output checks alike. The devices are private twins made with mknod
in tmp_path, so a regression can never replace the system's /dev/null."""
from __future__ import annotations

import errno
import os
import socket
import stat
import threading

import numpy as np
import pytest

import minigrad as mg
from train.arguments import check_outputs, parse_args

NULL, FULL, LOOP0 = os.makedev(1, 3), os.makedev(1, 7), os.makedev(7, 0)


def _device(folder, name: str, kind: int, number: int):
    """A device node in `folder` (skips where this process may not make one)."""
    path = folder / name
    try:
        os.mknod(path, kind | 0o666, number)
    except PermissionError:
        pytest.skip("making device nodes needs root (CAP_MKNOD)")
    return path


def _checkpoint() -> dict:
    """Big enough (about 1 MB) that a FIFO's 64 KiB buffer fills many times over."""
    return {"weight": mg.tensor(np.arange(250_000, dtype=np.float32)), "step": 3}


def _assert_same_checkpoint(loaded: dict, saved: dict) -> None:
    assert loaded["step"] == saved["step"]
    assert loaded["weight"].numpy().tobytes() == saved["weight"].numpy().tobytes()


def test_a_character_device_stays_a_device_and_swallows_the_checkpoint(tmp_path):
    null = _device(tmp_path, "null", stat.S_IFCHR, NULL)
    link = tmp_path / "link_to_null"
    link.symlink_to(null)
    for path in (null, link):
        mg.save(_checkpoint(), path)
        assert stat.S_ISCHR(os.stat(null).st_mode) and os.stat(null).st_rdev == NULL
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link_to_null", "null"]


def test_a_full_device_raises_enospc_naming_the_path_and_leaves_nothing(tmp_path):
    full = _device(tmp_path, "full", stat.S_IFCHR, FULL)
    with pytest.raises(OSError) as info:
        mg.save(_checkpoint(), full)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(full)
    assert stat.S_ISCHR(os.stat(full).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["full"]


def test_a_fifo_reader_receives_the_checkpoint(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = bytearray()

    def read_everything():
        with open(fifo, "rb") as pipe:  # waits for the writer, reads until it closes
            received.extend(pipe.read())

    reader = threading.Thread(target=read_everything, daemon=True)
    reader.start()
    saved = _checkpoint()
    mg.save(saved, fifo)
    reader.join(timeout=30)
    assert not reader.is_alive(), "the reader never got an end of file"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    copy = tmp_path / "received.safetensors"
    copy.write_bytes(received)
    _assert_same_checkpoint(mg.load(copy), saved)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "received.safetensors"]


def _refused_kinds(folder) -> list:
    """(path, what the error says) for a socket and a block device in `folder`."""
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(folder / "socket"))
    listening.close()  # the socket file stays
    block = _device(folder, "block", stat.S_IFBLK, LOOP0)
    return [(folder / "socket", "cannot write to a socket"),
            (block, "cannot write to a block device")]


def test_sockets_and_block_devices_are_refused_before_anything_is_written(tmp_path):
    for path, problem in _refused_kinds(tmp_path):
        kind = stat.S_IFMT(os.stat(path).st_mode)
        with pytest.raises(OSError, match=problem) as info:
            mg.save(_checkpoint(), path)
        assert info.value.filename == str(path)
        assert stat.S_IFMT(os.stat(path).st_mode) == kind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["block", "socket"]


def _cli_args(tmp_path, save_path) -> object:
    return parse_args(["--out-dir", str(tmp_path / "run"), "--save", str(save_path)])


def test_the_command_line_takes_devices_and_fifos_without_opening_them(tmp_path):
    """A FIFO nobody reads would block an open(); the check must only look at it."""
    null = _device(tmp_path, "null", stat.S_IFCHR, NULL)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path in (null, fifo):
        checking = threading.Thread(target=check_outputs, daemon=True,
                                    args=(_cli_args(tmp_path, path), True))
        checking.start()
        checking.join(timeout=30)
        assert not checking.is_alive(), f"checking --save {path} blocked"
    assert stat.S_ISCHR(os.stat(null).st_mode) and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "pipe"]


def test_the_command_line_refuses_sockets_and_block_devices_before_training(tmp_path,
                                                                            capsys):
    for path, problem in _refused_kinds(tmp_path):
        with pytest.raises(SystemExit) as info:
            check_outputs(_cli_args(tmp_path, path), training=True)
        assert info.value.code == 2
        message = capsys.readouterr().err
        assert f"argument --save: {path}: {problem}" in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["block", "socket"]
