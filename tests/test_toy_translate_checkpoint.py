"""A toy_translate checkpoint is checked field by field before the model is built: a
hostile header (10^7 layers, a step of 1e308, another RNG) is refused with a
CheckpointError naming the file and the field, without allocating; fuzzed files raise
only ValueError or OSError; the CLI turns any of it into one line and exit status 1."""
from __future__ import annotations

import copy
import os
import random
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from train.checkpoint import load_model, load_run, new_train_state, save_run
from train.checkpoint_checks import CheckpointError
from train.config import Config
from train.data import make_vocabularies

ROOT = Path(__file__).resolve().parents[1]
CONFIG = Config(d_model=16, heads=2, layers=1, ff=32, batch_size=8, steps=3, warmup=10,
                train_size=50, eval_every=3)


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory) -> tuple[Path, dict]:
    """A checkpoint of a tiny run after 3 optimizer steps, and its contents."""
    src_vocab, tgt_vocab = make_vocabularies()
    state = new_train_state(CONFIG, src_vocab, tgt_vocab, "cpu")
    for _ in range(3):  # real Adam state and scheduler steps, without the data set
        src = mg.randint(4, len(src_vocab), (2, 5))
        tgt = mg.randint(4, len(tgt_vocab), (2, 6))
        state.optimizer.zero_grad()
        state.model(src, tgt).mean().backward()
        state.optimizer.step()
        state.scheduler.step()
        state.step += 1
        state.losses.append(1.0 / state.step)
    state.val_losses[3] = 0.5
    path = tmp_path_factory.mktemp("run") / "run.safetensors"
    save_run(str(path), state, CONFIG, src_vocab, tgt_vocab)
    return path, mg.load(path)


def test_a_valid_checkpoint_restores(saved_run):
    path, saved = saved_run
    state, config, _, _ = load_run(str(path), "cpu")
    assert config == CONFIG and state.step == 3 and state.val_losses == {3: 0.5}
    assert state.scheduler.last_epoch == 3
    np.testing.assert_array_equal(state.model.generator.weight.numpy(),
                                  saved["model"]["generator.weight"].numpy())


def _set(path: tuple, value):
    def change(saved):
        target = saved
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _delete(path: tuple):
    def change(saved):
        target = saved
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


HOSTILE = [
    (_set(("config", "layers"), 10**7), "config says 10000000 layers, the file holds 1"),
    (_set(("config", "d_model"), 10**6), "does not match the model's tensors"),
    (_set(("config", "ff"), 10**9), "encoder.layers.0.feed_forward.linear1.weight should be"),
    (_set(("config", "heads"), 0), "config: heads must be an integer >= 1, got 0"),
    (_set(("config", "heads"), 3), "config: d_model (16) must be divisible by heads (3)"),
    (_set(("config", "dropout"), 1.5), "config: dropout must be a finite number in [0.0, 1.0)"),
    (_set(("config", "steps"), "3"), "config: steps must be an integer >= 1, got '3'"),
    (_set(("config", "lr_factor"), float("nan")), "config: lr_factor"),
    (_set(("config", "extra"), 1), "config: a config must have exactly the fields"),
    (_delete(("config", "seed")), "config: a config must have exactly the fields"),
    (_set(("config",), [1, 2]), "config: a config must have exactly the fields"),
    (_set(("step",), 1e308), "step must be an integer >= 0, got 1e+308"),
    (_set(("step",), -1), "step must be an integer >= 0, got -1"),
    (_set(("step",), True), "step must be an integer >= 0, got True"),
    (_set(("losses",), np.zeros(2)), "losses must be 3 finite float64 values"),
    (_set(("losses",), np.array([1.0, np.nan, 2.0])), "losses must be 3 finite"),
    (_set(("losses",), [1.0, 2.0, 3.0]), "losses must be 3 finite float64 values"),
    (_set(("val_losses", "7"), 0.5), "val_losses must map steps 1..3 to finite losses"),
    (_set(("val_losses", "x"), 0.5), "val_losses must map steps"),
    (_set(("val_losses", "2"), float("inf")), "val_losses must map steps"),
    (_set(("rng", "cpu", "bit_generator"), "MT19937"),
     "set_rng_state: the 'cpu' state is for a 'MT19937'"),
    (_set(("rng", "cpu", "state", "inc"), -5), "'state' must hold"),
    (_set(("rng",), None), "set_rng_state: expected a dict"),
    (_set(("src_vocab", "tokens"), ["a", "b"]), "src_vocab: a vocabulary must start with"),
    (_set(("tgt_vocab", "tokens"), 7), "tgt_vocab: a vocabulary's tokens must be a list"),
    (_set(("tgt_vocab",), {"tokens": ["<pad>", "<s>", "</s>", "<unk>", "a", "a"]}),
     "tgt_vocab: vocabulary words must be unique"),
    (_set(("scheduler", "warmup_steps"), 99), "scheduler's warmup_steps is 99"),
    (_set(("scheduler", "last_epoch"), 2), "scheduler's last_epoch is 2, the config and step "
                                           "say 3"),
    (_set(("scheduler", "base_lrs"), "x"), "NoamLR state 'base_lrs' must be like"),
    (_set(("scheduler", "optimizer"), 1), "NoamLR.load_state_dict: expected the entries"),
    (_set(("optimizer", "param_groups", 0, "lr"), "fast"), "parameter group 0's 'lr'"),
    (_set(("optimizer", "param_groups", 0, "betas"), (0.9,)), "parameter group 0's 'betas'"),
    (_delete(("optimizer", "param_groups", 0, "eps")), "expected at least"),
    (_set(("optimizer", "state", 0, "exp_avg"), mg.zeros(3)), "'exp_avg' must be a floating "
                                                             "array of the parameter's shape"),
    (_delete(("optimizer", "state", 0, "exp_avg_sq")), "loaded state of parameter 0 has the "
                                                      "entries"),
    (_set(("optimizer", "state", 0, "step"), -1), "'step' must be an int >= 0"),
    (_set(("optimizer", "state", 10**6), {}), "state for parameter 1000000"),
    (_delete(("model", "generator.bias")), "model: Missing key(s) in state_dict: "
                                           "'generator.bias'"),
    (_set(("model", "generator.bias"), mg.zeros(7)), "size mismatch for generator.bias"),
    (_set(("model", "evil"), mg.zeros(1)), "Unexpected key(s) in state_dict: 'evil'"),
    (_set(("model", "generator.bias"), np.zeros(2)), "model: expected a dict of tensors"),
    (_set(("model", 7), mg.zeros(2)), "model: expected a dict of tensors by name"),
    (_delete(("rng",)), "not a toy_translate checkpoint"),
    (_set((3,), "int key"), "not a toy_translate checkpoint"),
]


@pytest.mark.parametrize("change, problem", HOSTILE, ids=[p for _, p in HOSTILE])
def test_hostile_run_headers_are_refused_naming_file_and_field(saved_run, tmp_path, change,
                                                               problem):
    _, saved = saved_run
    hostile = copy.deepcopy(saved)
    change(hostile)
    path = tmp_path / "hostile.safetensors"
    mg.save(hostile, path)
    with pytest.raises(CheckpointError) as info:
        load_run(str(path), "cpu")
    assert str(info.value).startswith(f"{path}: ") and problem in str(info.value), info.value
    assert "\n" not in str(info.value)


def test_a_config_of_ten_million_layers_allocates_nothing(saved_run, tmp_path):
    _, saved = saved_run
    hostile = copy.deepcopy(saved)
    hostile["config"]["layers"] = 10**7
    path = tmp_path / "huge.safetensors"
    mg.save(hostile, path)
    tracemalloc.start()
    for load in (load_run, load_model):
        with pytest.raises(CheckpointError, match="10000000 layers"):
            load(str(path), "cpu")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20 * 2**20, peak  # 10**7 layers of this model would take hundreds of GB


def test_a_plain_safetensors_file_is_not_a_run(tmp_path):
    path = tmp_path / "weights.safetensors"
    mg.save({"w": mg.ones(2)}, path)
    with pytest.raises(CheckpointError, match="not a toy_translate checkpoint"):
        load_run(str(path), "cpu")


def test_fuzzed_run_checkpoints_raise_only_value_or_os_errors(saved_run, tmp_path):
    path, _ = saved_run
    data = path.read_bytes()
    header_end = 8 + int.from_bytes(data[:8], "little")
    rng = random.Random(7)
    fuzzed = tmp_path / "fuzzed.safetensors"
    outcomes = {"loaded": 0, "refused": 0}
    for trial in range(200):
        mutated = bytearray(data)
        if trial % 4 == 0:
            mutated = mutated[: rng.randrange(len(data))]
        elif trial % 4 == 1:
            position = rng.randrange(header_end)
            mutated[position:position] = rng.randbytes(rng.randint(1, 6))
        else:  # flips, most of them in the header, where the structure is
            for _ in range(rng.randint(1, 3)):
                position = rng.randrange(header_end if rng.random() < 0.9 else len(data))
                mutated[position] ^= 1 << rng.randrange(8)
        fuzzed.write_bytes(bytes(mutated))
        started = time.perf_counter()
        try:
            load_run(str(fuzzed), "cpu")
            outcomes["loaded"] += 1
        except (ValueError, OSError):
            outcomes["refused"] += 1
        assert time.perf_counter() - started < 5.0
    assert outcomes["refused"] > 100


def _run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "train.toy_translate", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


def test_the_cli_names_a_bad_checkpoint_in_one_line_and_exits_1(saved_run, tmp_path):
    _, saved = saved_run
    hostile = copy.deepcopy(saved)
    hostile["config"]["layers"] = 10**7
    huge = tmp_path / "huge.safetensors"
    mg.save(hostile, huge)
    pickled = tmp_path / "pickled.pt"
    pickled.write_bytes(b"\x80\x04\x95" + b"\0" * 40)
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(saved_run[0].read_bytes()[:1000])
    for path, problem in ((huge, "config says 10000000 layers"), (pickled, "pickle"),
                          (cut, "truncated")):
        for command in (["--resume", str(path), "--steps", "5"],
                        ["--translate", "merci", "--resume", str(path)]):
            result = _run_cli(*command, "--out-dir", str(tmp_path / "out"))
            assert result.returncode == 1, result.stderr
            assert "Traceback" not in result.stderr
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"toy_translate: {path}: ")
            assert problem in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


def _paths(node, prefix=()):
    """Every path into the nested dicts and lists of a loaded checkpoint."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, (list, tuple)):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index))


_ODD_VALUES = [None, -1, 0, 2**70, 1e308, float("nan"), "x", True, [], {}, (1,), {7: "x"},
               [mg.zeros(1)], mg.zeros(1), mg.zeros(2, 2, dtype=mg.int64), np.zeros(3)]


def test_any_field_replaced_by_an_odd_value_is_a_checkpoint_error(saved_run, tmp_path):
    """Structured fuzzing: the bytes are valid, one field of the run is replaced by a
    value of another kind; loading says so or works, and raises nothing else."""
    _, saved = saved_run
    paths = [path for path in _paths(saved) if path]
    rng = random.Random(11)
    for trial in range(150):
        hostile = copy.deepcopy(saved)
        path = rng.choice(paths)
        parent = hostile
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, tuple):
            continue  # tuples are immutable: their parent was or will be drawn
        parent[path[-1]] = copy.deepcopy(rng.choice(_ODD_VALUES))
        file = tmp_path / f"odd{trial}.safetensors"
        mg.save(hostile, file)
        try:
            load_run(str(file), "cpu")
        except CheckpointError as exc:
            assert str(exc).startswith(str(file))
