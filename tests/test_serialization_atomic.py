"""Saving is atomic and leaves nothing behind: a writer killed mid-save leaves the old file
and, once any later save runs in that folder, no temporary; and it behaves like
open(path, "w") for symlinks, file modes and errors."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

import minigrad as mg
from minigrad.serialization import atomic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and umask are POSIX")

# a writer that stops at `pause_at` (fsync: the data is written but not yet renamed into
# place; replace: the temporary has its name and waits to be renamed) until killed
_WRITER = textwrap.dedent("""
    import os, sys, time
    import minigrad as mg
    from minigrad.serialization import atomic

    path, pause_at, unnamed = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    atomic._UNNAMED = atomic._UNNAMED and unnamed

    def pause(*args):
        print("paused", flush=True)
        time.sleep(120)

    setattr(os, pause_at, pause)
    mg.save({"w": mg.zeros(100_000)}, path)
""")


def _kill_mid_save(path, pause_at: str, unnamed: bool) -> None:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), pause_at,
                               "1" if unnamed else "0"], stdout=subprocess.PIPE, env=env,
                              text=True)
    try:
        assert writer.stdout.readline() == "paused\n"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)  # reaped: its pid is dead, not a zombie


_UNNAMED_CASES = [pytest.param(True, id="O_TMPFILE",
                               marks=pytest.mark.skipif(not atomic._UNNAMED,
                                                        reason="no O_TMPFILE here")),
                  pytest.param(False, id="named temporary")]


@pytest.mark.parametrize("unnamed", _UNNAMED_CASES)
@pytest.mark.parametrize("pause_at", ["fsync", "replace"])
def test_a_writer_killed_mid_save_leaves_the_old_file_and_no_orphan(tmp_path, pause_at,
                                                                    unnamed):
    path = tmp_path / "ckpt.safetensors"
    mg.save({"w": mg.ones(3)}, path)
    _kill_mid_save(path, pause_at, unnamed)
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name != "ckpt.safetensors")
    if unnamed and pause_at == "fsync":
        assert leftovers == []  # the data was never given a name
    else:
        assert len(leftovers) == 1 and ".minigrad-" in leftovers[0]
    assert mg.load(path)["w"].tolist() == [1.0, 1.0, 1.0]
    mg.save({"other": mg.ones(1)}, tmp_path / "other.safetensors")  # any save in the folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.safetensors",
                                                          "other.safetensors"]


def test_temporaries_of_live_writers_and_other_hosts_are_kept(tmp_path):
    host = atomic._HOST
    kept = [f".ckpt.minigrad-{host}-{os.getpid()}-0123abcd.tmp",  # this process, saving
            f".ckpt.minigrad-{host}-{os.getppid()}-0123abcd.tmp",  # a live process
            f".ckpt.minigrad-another-host-{os.getpid() + 10**6}-0123abcd.tmp",
            ".ckpt.tmp-unrelated.ckpt", "notes.txt"]
    for name in kept:
        (tmp_path / name).write_bytes(b"x")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / f".ckpt.minigrad-{host}-{dead}-0123abcd.tmp").write_bytes(b"x")
    mg.save({"w": mg.ones(1)}, tmp_path / "ckpt")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(kept + ["ckpt"])


def test_saving_through_a_symlink_replaces_its_target(tmp_path):
    target_dir = tmp_path / "store"
    target_dir.mkdir()
    target = target_dir / "real.safetensors"
    mg.save({"w": mg.ones(1)}, target)
    link = tmp_path / "latest.safetensors"
    link.symlink_to(target)
    mg.save({"w": mg.zeros(2)}, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert mg.load(target)["w"].tolist() == [0.0, 0.0]
    dangling = tmp_path / "dangling.safetensors"
    dangling.symlink_to(target_dir / "new.safetensors")
    mg.save({"w": mg.ones(1)}, dangling)
    assert dangling.is_symlink() and mg.load(target_dir / "new.safetensors")["w"].item() == 1
    assert sorted(p.name for p in target_dir.iterdir()) == ["new.safetensors",
                                                            "real.safetensors"]


@pytest.mark.parametrize("unnamed", _UNNAMED_CASES)
def test_a_new_file_follows_the_umask_and_an_old_one_keeps_its_mode(tmp_path, monkeypatch,
                                                                    unnamed):
    monkeypatch.setattr(atomic, "_UNNAMED", unnamed)
    previous = os.umask(0o027)
    try:
        mg.save({"w": mg.ones(1)}, tmp_path / "new")
        os.umask(0o002)
        mg.save({"w": mg.ones(1)}, tmp_path / "wide")
        (tmp_path / "old").write_bytes(b"")
        os.chmod(tmp_path / "old", 0o604)
        mg.save({"w": mg.ones(1)}, tmp_path / "old")
    finally:
        os.umask(previous)
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "wide").stat().st_mode & 0o777 == 0o664
    assert (tmp_path / "old").stat().st_mode & 0o777 == 0o604


@pytest.mark.parametrize("unnamed", _UNNAMED_CASES)
def test_errors_name_the_path_given_not_the_temporary(tmp_path, monkeypatch, unnamed):
    monkeypatch.setattr(atomic, "_UNNAMED", unnamed)
    missing = tmp_path / "no_such_folder" / "ckpt.safetensors"
    with pytest.raises(FileNotFoundError) as info:
        mg.save({"w": mg.ones(1)}, missing)
    assert info.value.filename == str(missing) and str(missing) in str(info.value)
    assert ".tmp" not in str(info.value)
    with pytest.raises(IsADirectoryError, match=re.escape(str(tmp_path))):
        mg.save({"w": mg.ones(1)}, tmp_path)
    read_only = tmp_path / "read_only"
    read_only.mkdir(mode=0o500)
    if os.geteuid() != 0:  # root writes anywhere
        with pytest.raises(PermissionError) as info:
            mg.save({"w": mg.ones(1)}, read_only / "ckpt")
        assert info.value.filename == str(read_only / "ckpt")
    assert list(tmp_path.iterdir()) == [read_only]
