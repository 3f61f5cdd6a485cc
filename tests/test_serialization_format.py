"""The checkpoint file format: every structure save accepts loads back bit for bit (header
lengths that look like pickle or zip magic included), other tools' safetensors files load
with their names, map_location places tensors, and hostile or corrupt files raise only
ValueError (or OSError), naming the file and the problem, before anything is built."""
from __future__ import annotations

import json
import random
import struct
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from state_compare import assert_identical

import minigrad as mg
from minigrad import nn, optim

# ----------------------------------------------------------------------------- round trips

_TENSOR_DTYPES = (mg.bool, mg.int64, mg.float16, mg.float32, mg.float64)
_ARRAY_DTYPES = (np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
                 np.uint64, np.int64, np.float16, np.float32, np.float64)


def _array_of(dtype: np.dtype, shape: tuple, raw: bytes) -> np.ndarray:
    """An array of `shape` whose bits come from `raw` (NaN payloads and subnormals too)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    if dtype == np.bool_:
        return (np.frombuffer(raw[:count], np.uint8) & 1).astype(bool).reshape(shape)
    return np.frombuffer(raw[: count * dtype.itemsize], dtype).reshape(shape).copy()


@st.composite
def _arrays(draw, dtypes):
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    raw = draw(st.binary(min_size=int(np.prod(shape)) * dtype.itemsize,
                         max_size=int(np.prod(shape)) * dtype.itemsize))
    return _array_of(dtype, shape, raw)


_tensors = _arrays([d.np for d in _TENSOR_DTYPES]).map(mg.from_numpy)
# any characters, lone surrogates included
_names = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
_keys = _names | st.integers(-(2**70), 2**70)
_scalars = (st.none() | st.booleans() | st.integers(-(2**100), 2**100)
            | st.floats(allow_nan=True, allow_infinity=True) | _names)
_leaves = _tensors | _arrays(_ARRAY_DTYPES) | _scalars
_structures = st.recursive(
    _leaves,
    lambda children: (st.lists(children, max_size=4) | st.lists(children, max_size=4).map(tuple)
                      | st.dictionaries(_keys, children, max_size=4)),
    max_leaves=24,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(obj=_structures)
def test_every_structure_round_trips_bit_for_bit(tmp_path_factory, obj):
    path = tmp_path_factory.mktemp("round_trip") / "ckpt.safetensors"
    mg.save(obj, path)
    assert_identical(mg.load(path), obj)


@settings(max_examples=40, deadline=None)
@given(names=st.lists(_names, min_size=0, max_size=12, unique=True), data=st.data())
def test_flat_state_dicts_of_any_size_and_names_round_trip(tmp_path_factory, names, data):
    state = {name: data.draw(_tensors) for name in names}
    path = tmp_path_factory.mktemp("flat") / "state.safetensors"
    mg.save(state, path)
    assert_identical(mg.load(path), state)


def _header_length(path) -> int:
    with open(path, "rb") as file:
        return struct.unpack("<Q", file.read(8))[0]


def _save_with_header_length(path, modulus: int, residue: int) -> None:
    """Save a state dict whose header length is `residue` modulo `modulus`, by growing
    one tensor's name (each character adds a few header bytes: the tensor's key in the
    safetensors header, the dict key and the reference in the structure)."""
    def save(name_length):
        mg.save({"w" * name_length: mg.arange(3), "b": mg.ones(2)}, path)
        return _header_length(path)

    base = save(1)
    per_character = (save(1 + 64) - base) / 64
    target = base + (residue - base) % modulus
    estimate = 1 + round((target - base) / per_character)
    for name_length in range(max(1, estimate - 8), estimate + 9):
        if save(name_length) % modulus == residue:
            return
    raise AssertionError("no name length gives that header length")


@pytest.mark.parametrize("modulus, residue, magic", [(256, 0x80, b"\x80"), (65536, 0x4B50, b"PK")])
def test_header_lengths_that_look_like_pickle_or_zip_magic_load(tmp_path, modulus, residue,
                                                                  magic):
    path = tmp_path / "ckpt.safetensors"
    _save_with_header_length(path, modulus, residue)
    assert path.read_bytes().startswith(magic)
    loaded = mg.load(path)
    assert loaded["b"].tolist() == [1.0, 1.0] and len(loaded) == 2


def test_five_linear_layers_load_again(tmp_path):
    """The state dict whose header length is 0x480: its first byte is pickle's \\x80."""
    path = tmp_path / "ckpt.safetensors"
    state = nn.Sequential(*[nn.Linear(4, 4) for _ in range(5)]).state_dict()
    mg.save(state, path)
    assert path.read_bytes()[:1] == b"\x80"
    assert_identical(mg.load(path), state)


def test_nesting_is_limited_the_same_way_on_save_and_load(tmp_path):
    deep = []
    for _ in range(98):
        deep = [deep]
    mg.save({"deep": deep}, tmp_path / "ok")  # 100 containers with the outer dict
    assert_identical(mg.load(tmp_path / "ok"), {"deep": deep})
    with pytest.raises(ValueError, match="deeper than 100"):
        mg.save({"deep": [deep]}, tmp_path / "too_deep")
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="hold itself"):
        mg.save(loop, tmp_path / "loop")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok"]


# ----------------------------------------------------------------------------- other tools


def test_our_files_are_plain_safetensors_files(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    model = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
    path = tmp_path / "model.safetensors"
    mg.save(model.state_dict(), path)
    theirs = safetensors_numpy.load_file(str(path))
    assert sorted(theirs) == sorted(model.state_dict())
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(theirs[name], value.numpy())


def test_files_written_by_safetensors_numpy_load_as_a_flat_dict(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    arrays = {"encoder.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
              "ids": np.array([1, -2], dtype=np.int32), "bytes": np.array([0, 255], np.uint8),
              "mask": np.array([True, False]), "scalar": np.array(2.5, np.float64),
              "half": np.array([1.5], np.float16), "empty": np.zeros((0, 4), np.float32),
              "big": np.array([2**63 - 1], np.uint64)}
    path = tmp_path / "numpy.safetensors"
    safetensors_numpy.save_file(arrays, str(path), metadata={"format": "np"})
    loaded = mg.load(path)
    assert list(loaded) == sorted(arrays)  # safetensors' own load_file order
    expected_dtypes = {"encoder.weight": mg.float32, "ids": mg.int32, "bytes": mg.uint8,
                       "mask": mg.bool, "scalar": mg.float64, "half": mg.float16,
                       "empty": mg.float32, "big": mg.int64}
    for name, array in arrays.items():
        assert isinstance(loaded[name], mg.Tensor) and loaded[name].dtype == expected_dtypes[name]
        assert loaded[name].shape == array.shape
        np.testing.assert_array_equal(loaded[name].numpy(), array)
    safetensors_numpy.save_file({"huge": np.array([2**63], np.uint64)}, str(path))
    with pytest.raises(ValueError, match="uint64 values beyond int64"):
        mg.load(path)


def test_pytorch_safetensors_files_load_into_a_minigrad_model(tmp_path):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
    path = tmp_path / "torch.safetensors"
    safetensors_torch.save_file(theirs.state_dict(), str(path))
    ours = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    ours.load_state_dict(mg.load(path))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(mg.tensor(x)).detach().numpy(),
                               theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-6, atol=1e-6)
    extras = {"bf16": torch.tensor([1.5, -3.25, 1e38], dtype=torch.bfloat16),
              "i16": torch.tensor([-7, 9], dtype=torch.int16), "b": torch.tensor([True])}
    safetensors_torch.save_file(extras, str(path))
    loaded = mg.load(path)
    assert loaded["bf16"].dtype == mg.float32  # bfloat16 widens exactly
    assert loaded["bf16"].tolist() == extras["bf16"].float().tolist()
    assert loaded["i16"].dtype == mg.int16 and loaded["i16"].tolist() == [-7, 9]
    assert loaded["b"].tolist() == [True]


# ----------------------------------------------------------------------------- map_location


def _write_raw(path, header, data: bytes = b"") -> None:
    """A safetensors file with exactly this header (a dict, or raw bytes) and data."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def _gpu_checkpoint(path) -> None:
    """What save writes for {"w": <GPU tensor [1., 2.]>}, made without a GPU."""
    structure = {"format": "minigrad.checkpoint/1",
                 "structure": {"dict": [["w", {"tensor": "w", "device": "gpu"}]]}}
    _write_raw(path, {"__metadata__": {"minigrad": json.dumps(structure)},
                      "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
               np.array([1, 2], np.float32).tobytes())


@pytest.mark.parametrize("location", ["cpu", "CPU", mg.Device("cpu"), {"gpu": "cpu"},
                                      {mg.Device("gpu"): mg.Device("cpu")}])
def test_map_location_puts_gpu_tensors_on_the_cpu(tmp_path, location):
    _gpu_checkpoint(tmp_path / "ckpt")
    loaded = mg.load(tmp_path / "ckpt", map_location=location)["w"]
    assert loaded.device == "cpu" and loaded.tolist() == [1.0, 2.0]


def test_map_location_refuses_unknown_locations_before_reading(tmp_path):
    missing = tmp_path / "missing"  # not read: the location is checked first
    with pytest.raises(ValueError, match="unknown map_location 'tpu'"):
        mg.load(missing, map_location="tpu")
    with pytest.raises(ValueError, match="unknown map_location 'npu'"):
        mg.load(missing, map_location={"npu": "cpu"})
    with pytest.raises(TypeError, match="map_location must be"):
        mg.load(missing, map_location=0)


@pytest.mark.skipif(mg.cuda.is_available(), reason="this machine has a GPU")
def test_gpu_locations_without_a_gpu_say_why_and_what_to_do(tmp_path):
    _gpu_checkpoint(tmp_path / "ckpt")
    with pytest.raises(RuntimeError, match="saved from the GPU.*map_location='cpu'"):
        mg.load(tmp_path / "ckpt")
    mg.save({"w": mg.ones(1)}, tmp_path / "cpu_ckpt")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        mg.load(tmp_path / "cpu_ckpt", map_location="gpu")


@pytest.mark.skipif(not mg.cuda.is_available(), reason="needs CUDA")
def test_gpu_tensors_load_back_on_the_gpu_unless_mapped(tmp_path):
    path = tmp_path / "ckpt"
    mg.save({"gpu": mg.ones(2, device="gpu"), "cpu": mg.zeros(2)}, path)
    loaded = mg.load(path)
    assert loaded["gpu"].device == "gpu" and loaded["cpu"].device == "cpu"
    assert mg.load(path, map_location="cpu")["gpu"].device == "cpu"
    assert mg.load(path, map_location="cuda")["cpu"].device == "gpu"
    assert mg.load(path, map_location={"cpu": "gpu"})["cpu"].device == "gpu"


# ----------------------------------------------------------------------------- hostile files

_OK = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
_DATA = b"\0" * 8


def _structure(node) -> dict:
    return {"minigrad": json.dumps({"format": "minigrad.checkpoint/1", "structure": node})}


_HOSTILE = [
    ([1, 2], b"", "not an object"),
    ({"w": {"dtype": "F32", "shape": [2]}}, _DATA, "expected an object with the fields"),
    ({"w": dict(_OK, extra=1)}, _DATA, "expected an object with the fields"),
    ({"w": dict(_OK, dtype="F99")}, _DATA, "unknown dtype 'F99'"),
    ({"w": dict(_OK, dtype="F8_E4M3", shape=[8])}, _DATA, "F8_E4M3 has no minigrad"),
    ({"w": dict(_OK, shape=[-2])}, _DATA, "non-negative integers"),
    ({"w": dict(_OK, shape=[True, 2])}, _DATA, "non-negative integers"),
    ({"w": dict(_OK, shape=[2.0])}, _DATA, "non-negative integers"),
    ({"w": dict(_OK, shape=[1] * 65)}, _DATA, "at most 64"),
    ({"w": dict(_OK, shape=[0, 2**62], data_offsets=[0, 0])}, b"", "too large"),
    ({"w": dict(_OK, data_offsets=[0])}, _DATA, "data_offsets must be"),
    ({"w": dict(_OK, data_offsets=[8, 0])}, _DATA, "data_offsets must be"),
    ({"w": dict(_OK, data_offsets=[0, 12])}, b"\0" * 12, "takes 8 bytes, its offsets span 12"),
    ({"w": dict(_OK, shape=[10**40])}, _DATA, "too large"),
    ({"a": _OK, "b": _OK}, _DATA, "overlaps"),
    ({"a": _OK, "b": dict(_OK, data_offsets=[12, 20])}, b"\0" * 20, "gap"),
    ({"w": _OK}, b"\0" * 12, "the tensors take 8 bytes of data, the file holds 12"),
    ({"w": _OK}, b"\0" * 4, "truncated"),
    ({"w": dict(_OK, dtype="BOOL", shape=[8])}, b"\0\1\5\0\0\0\0\0", "other than 0 and 1"),
    ({"__metadata__": {"minigrad": 3}}, b"", "strings to strings"),
    ({"__metadata__": ["x"]}, b"", "strings to strings"),
    (b'{"w": {}, "w": {}}', b"", "appears twice"),
    (b'{"w": NaN}', b"", "NaN is not a JSON number"),
    (b"\xff\xfe{}", b"", "not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, b"", "nests deeper than"),
    ({"__metadata__": {"minigrad": "{not json"}}, b"", "not valid JSON"),
    ({"__metadata__": {"minigrad": json.dumps({"format": "other/9", "structure": 1})}}, b"",
     "found format 'other/9'"),
    ({"__metadata__": {"minigrad": json.dumps({"format": "minigrad.checkpoint/1"})}}, b"",
     "expected a 'minigrad.checkpoint/1' structure"),
    ({"__metadata__": _structure({"tensor": "w"}), "w": _OK}, _DATA, None),  # valid control
    ({"__metadata__": _structure({"tensor": "v"}), "w": _OK}, _DATA, "does not hold"),
    ({"__metadata__": _structure([{"tensor": "w"}, {"tensor": "w"}]), "w": _OK}, _DATA,
     "referenced twice"),
    ({"__metadata__": _structure(1), "w": _OK}, _DATA, "never uses"),
    ({"__metadata__": _structure({"tensor": "w", "device": "tpu"}), "w": _OK}, _DATA,
     "unknown device 'tpu'"),
    ({"__metadata__": _structure({"tensor": "w", "array": "w"}), "w": _OK}, _DATA,
     "expected one of the nodes"),
    ({"__metadata__": _structure({"set": [1]})}, b"", "expected one of the nodes"),
    ({"__metadata__": _structure({"tuple": 3})}, b"", "holds a list"),
    ({"__metadata__": _structure({"dict": [[1.5, 2]]})}, b"", "must be [str or int key"),
    ({"__metadata__": _structure({"dict": [[True, 2]]})}, b"", "must be [str or int key"),
    ({"__metadata__": _structure({"dict": [["a", 1], ["a", 2]]})}, b"", "'a' appears twice"),
    ({"__metadata__": {"minigrad": '{"format": "minigrad.checkpoint/1", "structure": '
                       + "[" * 100_000 + "]" * 100_000 + "}"}}, b"", "nests deeper than"),
]


@pytest.mark.parametrize("header, data, problem", _HOSTILE,
                         ids=[problem or "valid" for _, _, problem in _HOSTILE])
def test_hostile_headers_raise_value_error_naming_file_and_problem(tmp_path, header, data,
                                                                    problem):
    path = tmp_path / "hostile.safetensors"
    _write_raw(path, header, data)
    if problem is None:
        assert mg.load(path).shape == (2,)
        return
    with pytest.raises(ValueError) as info:
        mg.load(path)
    assert str(info.value).startswith(str(path)) and problem in str(info.value)


def test_hostile_header_lengths(tmp_path):
    path = tmp_path / "hostile"
    path.write_bytes(struct.pack("<Q", 2**64 - 1) + b"{}")
    with pytest.raises(ValueError, match="header length field says"):
        mg.load(path)
    path.write_bytes(b"\x01\x02")
    with pytest.raises(ValueError, match="truncated or empty"):
        mg.load(path)


def _checkpoint_bytes(tmp_path) -> bytes:
    """A realistic checkpoint: model, Adam state, scheduler, RNG, step, nested values."""
    mg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=0.01)
    model(mg.randn(5, 3)).sum().backward()
    opt.step()
    path = tmp_path / "valid.safetensors"
    mg.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
             "rng": mg.get_rng_state(), "step": 1, "losses": np.array([0.5, 0.25]),
             "mask": mg.tensor([True, False]), "notes": ("é", None, [1.5, float("inf")])},
            path)
    return path.read_bytes()


def _mutations(data: bytes, rng: random.Random):
    """Byte flips (mostly in the header, where the structure is), truncations, insertions."""
    header_end = 8 + struct.unpack("<Q", data[:8])[0]
    for _ in range(250):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(header_end if rng.random() < 0.8 else len(data))
            mutated[position] ^= 1 << rng.randrange(8)
        yield bytes(mutated)
    for _ in range(100):
        yield data[: rng.randrange(len(data))]
    for _ in range(150):
        position = rng.randrange(header_end if rng.random() < 0.7 else len(data) + 1)
        yield data[:position] + rng.randbytes(rng.randint(1, 9)) + data[position:]


def test_fuzzed_checkpoints_raise_only_value_or_os_errors_and_never_hang(tmp_path):
    data = _checkpoint_bytes(tmp_path)
    path = tmp_path / "fuzzed.safetensors"
    outcomes = {"loaded": 0, "refused": 0}
    for mutated in _mutations(data, random.Random(1234)):
        path.write_bytes(mutated)
        started = time.perf_counter()
        try:
            mg.load(path)
            outcomes["loaded"] += 1
        except (ValueError, OSError):
            outcomes["refused"] += 1
        assert time.perf_counter() - started < 2.0, "a load took seconds: near a hang"
    assert outcomes["refused"] > 300 and sum(outcomes.values()) == 500
