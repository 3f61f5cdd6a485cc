"""Checkpoints in binary file objects, as torch.save and torch.load take them: round trips
through io.BytesIO and real files, several checkpoints one after another in one stream,
each read from the stream's position and leaving it just after, and text-mode files,
unseekable streams, truncated streams, pickles and zips refused with clear errors."""
from __future__ import annotations

import io
import json
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest
from state_compare import assert_identical

import minigrad as mg
from minigrad import nn, optim


def _training_state() -> dict:
    """A model's and an Adam optimizer's state after one step, in a nested structure."""
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=0.01)
    model(mg.randn(5, 3)).sum().backward()
    opt.step()
    return {"model": model.state_dict(), "optimizer": opt.state_dict(),
            "rng": mg.get_rng_state(), "step": 1, "losses": np.array([0.5, 0.25]),
            "mask": mg.tensor([True, False]), "half": mg.tensor([1.5], dtype=mg.float16),
            "notes": ("é", None, [1.5, float("inf"), {"deep": mg.arange(3)}])}


def _saved_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    mg.save(obj, buffer)
    return buffer.getvalue()


def _gpu_checkpoint_bytes() -> bytes:
    """What save writes for {"w": <GPU tensor [1., 2.]>}, made without a GPU."""
    structure = {"format": "minigrad.checkpoint/1",
                 "structure": {"dict": [["w", {"tensor": "w", "device": "gpu"}]]}}
    header = json.dumps({"__metadata__": {"minigrad": json.dumps(structure)},
                         "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    return struct.pack("<Q", len(header)) + header + np.array([1, 2], np.float32).tobytes()


def test_round_trip_through_bytes_io():
    state = _training_state()
    buffer = io.BytesIO()
    mg.save(state, buffer)
    end = buffer.tell()
    assert end == len(buffer.getvalue()) > 0
    buffer.seek(0)
    assert_identical(mg.load(buffer), state)  # every tensor, array and number, bit for bit
    assert buffer.tell() == end
    buffer.seek(0)
    assert_identical(mg.load(buffer, map_location="cpu", weights_only=True), state)
    loaded = mg.load(io.BytesIO(buffer.getvalue()))
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=0.01)
    model.load_state_dict(loaded["model"])
    opt.load_state_dict(loaded["optimizer"])
    assert_identical(opt.state_dict(), state["optimizer"])


def test_the_stream_holds_the_same_bytes_as_a_file(tmp_path):
    state = _training_state()
    mg.save(state, tmp_path / "ckpt")
    assert _saved_bytes(state) == (tmp_path / "ckpt").read_bytes()


def test_checkpoints_back_to_back_load_one_after_another():
    first, second, third = {"w": mg.ones(2, 3)}, _training_state(), {"empty": {}, "n": 3}
    buffer = io.BytesIO()
    ends = []
    for state in (first, second, third):
        mg.save(state, buffer)
        ends.append(buffer.tell())
    buffer.seek(0)
    for state, end in zip((first, second, third), ends):
        assert_identical(mg.load(buffer), state)
        assert buffer.tell() == end  # exactly one checkpoint's bytes were read
    with pytest.raises(ValueError, match=r"<BytesIO>: truncated or empty \(0 bytes\)"):
        mg.load(buffer)


def test_a_checkpoint_is_read_from_the_stream_position_and_bytes_after_it_are_left():
    data = _saved_bytes({"w": mg.arange(4)})
    buffer = io.BytesIO(b"prefix" + data + b"trailer")
    assert buffer.read(6) == b"prefix"
    assert mg.load(buffer)["w"].tolist() == [0, 1, 2, 3]
    assert buffer.read() == b"trailer"


def test_real_files_opened_in_binary_mode(tmp_path):
    path = tmp_path / "ckpt"
    state = _training_state()
    with open(path, "wb") as file:
        file.write(b"magic!")
        mg.save(state, file)
        mg.save({"step": 2}, file)
        end = file.tell()
        assert os.path.getsize(path) == end  # flushed, and left open
    with open(path, "rb") as file:
        assert file.read(6) == b"magic!"
        assert_identical(mg.load(file), state)
        assert mg.load(file) == {"step": 2}
        assert file.tell() == end
    with open(path, "rb", buffering=0) as file:  # unbuffered: FileIO, no read-ahead
        file.seek(6)
        assert_identical(mg.load(file), state)


class _Trickle(io.RawIOBase):
    """A seekable stream that returns at most 3 bytes per read, as a raw file may."""

    def __init__(self, data: bytes):
        self.inner = io.BytesIO(data)

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, buffer):
        return self.inner.readinto(memoryview(buffer)[:3])

    def seek(self, offset, whence=os.SEEK_SET):
        return self.inner.seek(offset, whence)

    def tell(self):
        return self.inner.tell()


class _ReadOnly:
    """The least a file object needs for load: read, seek and tell, no readinto."""

    def __init__(self, data: bytes):
        self.inner = io.BytesIO(data)
        self.read, self.seek, self.tell = self.inner.read, self.inner.seek, self.inner.tell


@pytest.mark.parametrize("stream", [_Trickle, _ReadOnly])
def test_short_reads_and_streams_without_readinto(stream):
    state = {"w": mg.randn(7, 5), "ids": np.arange(11, dtype=np.int16), "step": 4}
    data = _saved_bytes(state) + _saved_bytes({"next": 1})
    file = stream(data)
    assert_identical(mg.load(file), state)
    assert mg.load(file) == {"next": 1}


def test_gpu_saved_tensors_in_a_stream_follow_map_location():
    buffer = io.BytesIO(_gpu_checkpoint_bytes())
    loaded = mg.load(buffer, map_location="cpu")["w"]
    assert loaded.device == "cpu" and loaded.tolist() == [1.0, 2.0]
    if mg.cuda.is_available():
        buffer.seek(0)
        assert mg.load(buffer)["w"].device == "gpu"
    else:
        buffer.seek(0)
        with pytest.raises(RuntimeError, match="<BytesIO>: tensor 'w' was saved from the GPU"):
            mg.load(buffer)


@pytest.mark.skipif(not mg.cuda.is_available(), reason="needs CUDA")
def test_gpu_tensors_round_trip_through_a_stream():
    buffer = io.BytesIO()
    mg.save({"gpu": mg.ones(2, device="gpu"), "cpu": mg.zeros(2)}, buffer)
    buffer.seek(0)
    loaded = mg.load(buffer)
    assert loaded["gpu"].device == "gpu" and loaded["cpu"].device == "cpu"
    buffer.seek(0)
    assert mg.load(buffer, map_location="cpu")["gpu"].device == "cpu"


def test_text_mode_files_are_refused_with_a_type_error(tmp_path):
    path = tmp_path / "ckpt.txt"
    with open(path, "w") as file:
        with pytest.raises(TypeError, match=r"mg\.save: .*binary file object with write\(\), "
                                            r"got a text-mode TextIOWrapper.*'wb'"):
            mg.save({"w": mg.ones(2)}, file)
    assert path.read_bytes() == b""  # nothing was written
    with open(path) as file:
        with pytest.raises(TypeError, match=r"mg\.load: .*got a text-mode TextIOWrapper.*'rb'"):
            mg.load(file)
    with pytest.raises(TypeError, match="text-mode StringIO"):
        mg.save({}, io.StringIO())


def test_objects_that_cannot_write_or_read_are_refused_with_a_type_error(tmp_path):
    for thing in (3, None, object(), [b"bytes"]):
        with pytest.raises(TypeError, match=r"mg\.save: expected a path or a binary file "
                                            rf"object with write\(\), got {type(thing).__name__}"):
            mg.save({}, thing)
        with pytest.raises(TypeError, match=r"mg\.load: expected a path or a binary file "
                                            rf"object with read\(\), got {type(thing).__name__}"):
            mg.load(thing)
    path = tmp_path / "ckpt"
    mg.save({"w": mg.ones(1)}, path)
    with open(path, "rb") as file:  # has write(), but was not opened for it
        with pytest.raises(TypeError, match=r"write\(\), got BufferedReader"):
            mg.save({}, file)
    with open(path, "ab") as file:
        with pytest.raises(TypeError, match=r"read\(\), got BufferedWriter"):
            mg.load(file)


def test_streams_that_cannot_seek_are_refused_naming_the_remedy():
    read_end, write_end = os.pipe()
    with open(read_end, "rb") as pipe, open(write_end, "wb") as writer:
        mg.save({"w": mg.ones(2)}, writer)
        with pytest.raises(io.UnsupportedOperation,
                           match=r"<BufferedReader>: mg\.load reads only files it can seek "
                                 r"in.*io\.BytesIO"):
            mg.load(pipe)


def test_truncated_streams_raise_value_error_naming_the_problem():
    data = _saved_bytes({"w": mg.randn(64, 64), "step": 3})
    header_end = 8 + struct.unpack("<Q", data[:8])[0]
    for cut, problem in [(0, r"truncated or empty \(0 bytes\)"),
                         (5, r"truncated or empty \(5 bytes\)"),
                         (40, "truncated or not a safetensors file: the header length field says"),
                         (header_end + 100, "truncated: the tensors take 16384 bytes of data, "
                                            "the file holds 100"),
                         (len(data) - 1, "truncated: the tensors take")]:
        buffer = io.BytesIO(b"xy" + data[:cut])
        buffer.seek(2)
        with pytest.raises(ValueError, match="^<BytesIO>: " + problem):
            mg.load(buffer)
        assert buffer.tell() == 2  # a refused stream is left where it was


def test_a_named_file_object_is_named_in_errors(tmp_path):
    path = tmp_path / "cut.safetensors"
    path.write_bytes(_saved_bytes({"w": mg.ones(8)})[:-4])
    with open(path, "rb") as file:
        with pytest.raises(ValueError, match=f"^{path}: truncated"):
            mg.load(file)


class _Exploit:
    """Unpickling this creates a marker file: what a malicious checkpoint would do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_and_zip_streams_are_refused_as_files_are(tmp_path):
    marker = tmp_path / "pwned"
    stream = io.BytesIO(pickle.dumps({"weights": _Exploit(str(marker))}))
    with pytest.raises(ValueError, match=r"<BytesIO>: this is a pickle file.*never unpickles"):
        mg.load(stream)
    assert not marker.exists() and stream.tell() == 0
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:  # the layout of a torch.save file
        zipped.writestr("archive/data.pkl", pickle.dumps({"w": [1.0]}))
    archive.seek(0)
    with pytest.raises(ValueError, match=r"<BytesIO>: this is a zip archive \(a torch\.save"):
        mg.load(archive)
    assert archive.tell() == 0


def test_a_checkpoint_inside_a_zip_archive_loads_from_its_member():
    archive = io.BytesIO()
    state = {"w": mg.randn(3, 3), "step": 9}
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("run/ckpt.safetensors", _saved_bytes(state))
    with zipfile.ZipFile(archive) as zipped, zipped.open("run/ckpt.safetensors") as member:
        assert_identical(mg.load(member), state)


def test_a_path_given_as_bytes_is_a_path(tmp_path):
    path = os.fsencode(tmp_path / "weights.safetensors")
    mg.save({"w": mg.arange(3.0)}, path)
    assert np.array_equal(mg.load(path)["w"].numpy(), [0.0, 1.0, 2.0])
    with open(path, "r+b") as file:
        file.truncate(20)
    with pytest.raises(ValueError, match=r"weights\.safetensors: truncated"):
        mg.load(path)
