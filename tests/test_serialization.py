"""Checkpoints: round trips of nested state, atomic writes, hostile and broken files,
and an exact resume of training in a fresh process."""
import json
import os
import pickle
import re
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from state_compare import assert_identical

import minigrad as mg
from minigrad import nn, optim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_round_trip_of_nested_state(tmp_path):
    model = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
    opt = optim.Adam(model.parameters(), lr=0.1)
    model(mg.randn(4, 3)).sum().backward()
    opt.step()
    obj = {
        "model": model.state_dict(),
        "optim": opt.state_dict(),
        "rng": mg.get_rng_state(),
        "step": 7,
        "note": "hello",
        "loss": 0.25,
        "flags": [True, None, ("a", 1)],
        "ids": np.arange(4, dtype=np.int64),
        "mask": mg.tensor([True, False]),
        "half": mg.tensor([1.5], dtype=mg.float16),
        "scalar": mg.tensor(3.0),
        "a.b": {"c": mg.zeros(1)},
        "a": {"b.c": mg.ones(1)},
    }
    path = tmp_path / "ckpt.safetensors"
    mg.save(obj, path)
    loaded = mg.load(path)
    assert_identical(loaded, obj)  # every tensor, array and number, bit for bit
    model.load_state_dict(loaded["model"])
    opt.load_state_dict(loaded["optim"])


def test_load_returns_writable_tensors(tmp_path):
    mg.save({"w": mg.ones(3)}, tmp_path / "w.st")
    loaded = mg.load(tmp_path / "w.st")["w"]
    with mg.no_grad():
        loaded.add_(1.0)
    assert loaded.tolist() == [2.0, 2.0, 2.0]


def test_save_rejects_unsupported_objects(tmp_path):
    with pytest.raises(TypeError, match="set"):
        mg.save({"bad": {1, 2}}, tmp_path / "x")
    with pytest.raises(TypeError, match="keys"):
        mg.save({(1, 2): 3}, tmp_path / "x")


def test_write_is_atomic_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    mg.save({"v": mg.ones(2)}, path)

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        mg.save({"v": mg.zeros(2)}, path)
    monkeypatch.undo()
    assert mg.load(path)["v"].tolist() == [1.0, 1.0]
    assert os.listdir(tmp_path) == ["ckpt"]


class _Exploit:
    """Unpickling this creates a marker file: what a malicious checkpoint would do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_payload_is_rejected_and_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.ckpt"
    path.write_bytes(pickle.dumps({"weights": _Exploit(str(marker))}))
    with pytest.raises(ValueError, match=r"evil\.ckpt.*pickle"):
        mg.load(path)
    assert not marker.exists()


def test_truncated_file_raises_naming_the_file(tmp_path):
    path = tmp_path / "ckpt"
    mg.save({"w": mg.randn(64, 64)}, path)
    data = path.read_bytes()
    for cut in (0, 5, 40, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError, match=str(path)):
            mg.load(path)


def test_corrupt_files_raise_clearly(tmp_path):
    """More hostile and corrupt headers: tests/test_serialization_format.py."""
    path = tmp_path / "ckpt"
    path.write_bytes(struct.pack("<Q", 4) + b"{]]]")
    with pytest.raises(ValueError, match="header is not valid JSON"):
        mg.load(path)
    header = json.dumps({"__metadata__": {"minigrad": "{not json"}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(ValueError, match="minigrad structure is not valid JSON"):
        mg.load(path)
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 99]},
                         "__metadata__": {"minigrad": "{}"}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 16)
    with pytest.raises(ValueError, match="takes 16 bytes, its offsets span 99"):
        mg.load(path)
    path.write_bytes(b"PK\x03\x04 zip")
    with pytest.raises(ValueError, match="zip"):
        mg.load(path)


@pytest.mark.parametrize("change, problem", [
    (lambda state: None, "expected a dict with the keys"),
    (lambda state: {**state, "extra": 1}, "expected a dict with the keys"),
    (lambda state: {**state, "bit_generator": "MT19937"}, "'MT19937' generator"),
    (lambda state: {**state, "state": {"state": "7", "inc": 1}}, "integers in [0, 2**128)"),
    (lambda state: {**state, "state": {"state": -1, "inc": 1}}, "integers in [0, 2**128)"),
    (lambda state: {**state, "state": {"state": 2**128, "inc": 1}}, "integers in [0, 2**128)"),
    (lambda state: {**state, "has_uint32": True}, "'has_uint32' must be 0 or 1"),
    (lambda state: {**state, "uinteger": 2**40}, "'uinteger'"),
])
def test_set_rng_state_refuses_states_it_did_not_make(change, problem):
    state = mg.get_rng_state()
    with pytest.raises(ValueError, match=re.escape(problem)):
        mg.set_rng_state({**state, "cpu": change(state["cpu"])})
    assert mg.get_rng_state() == state  # nothing was changed


def test_loading_a_mismatched_checkpoint_names_key_and_shapes(tmp_path):
    mg.save(nn.Linear(3, 2).state_dict(), tmp_path / "ckpt")
    with pytest.raises(RuntimeError, match=r"weight.*\(2, 3\).*\(4, 3\)"):
        nn.Linear(3, 4).load_state_dict(mg.load(tmp_path / "ckpt"))
    with pytest.raises(RuntimeError, match="Missing key.*'1.weight'"):
        nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2)).load_state_dict(
            {"0." + k: v for k, v in mg.load(tmp_path / "ckpt").items()})


# ----------------------------------------------------------------------------- exact resume

_TRAINING = textwrap.dedent("""
    import sys
    import minigrad as mg
    import minigrad.nn.functional as F
    from minigrad import nn, optim

    def build():
        mg.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Dropout(0.2), nn.Linear(8, 3))
        opt = optim.AdamW(model.parameters(), lr=0.01)
        scheduler = optim.lr_scheduler.NoamLR(opt, d_model=8, warmup_steps=3)
        return model, opt, scheduler

    def train(model, opt, scheduler, steps):
        losses = []
        for _ in range(steps):
            x = mg.randn(5, 4)
            y = mg.randint(0, 3, (5,))
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            scheduler.step()
            losses.append(loss.item().hex())
        return losses

    mode, path, total, split = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode == "reference":
        # uninterrupted run, then a fresh run of the first `split` steps that saves
        print(" ".join(train(*build(), total)))
        model, opt, scheduler = build()
        print(" ".join(train(model, opt, scheduler, split)))
        mg.save({"model": model.state_dict(), "optim": opt.state_dict(),
                 "scheduler": scheduler.state_dict(), "rng": mg.get_rng_state(),
                 "step": split}, path)
    else:
        model, opt, scheduler = build()
        state = mg.load(path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        scheduler.load_state_dict(state["scheduler"])
        mg.set_rng_state(state["rng"])
        print(" ".join(train(model, opt, scheduler, total - state["step"])))
""")


def _run(script, *args) -> list[list[str]]:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(script), *map(str, args)], env=env,
                          capture_output=True, text=True, check=True)
    return [line.split() for line in done.stdout.splitlines()]


def test_resume_in_a_fresh_process_gives_bitwise_equal_losses(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(_TRAINING)
    path = tmp_path / "ckpt"
    straight, first = _run(script, "reference", path, 8, 3)
    (rest,) = _run(script, "resume", path, 8, 3)
    assert len(straight) == 8 and first + rest == straight
