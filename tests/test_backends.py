"""mg.backends and mg.set_float32_matmul_precision: PyTorch's library switches, readable
and settable with PyTorch's defaults, so that scripts which set them run; none changes
what minigrad computes."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg
from minigrad.backends import cuda, cudnn

CUDNN_FLAGS = ("enabled", "benchmark", "deterministic", "allow_tf32")
MATMUL_FLAGS = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                "allow_bf16_reduced_precision_reduction")


@pytest.fixture(autouse=True)
def _restore_the_switches():
    saved_cudnn = {name: getattr(cudnn, name) for name in CUDNN_FLAGS}
    saved_precision = mg.get_float32_matmul_precision()
    saved_matmul = {name: getattr(cuda.matmul, name) for name in MATMUL_FLAGS[1:]}
    yield
    for name, value in saved_cudnn.items():
        setattr(cudnn, name, value)
    mg.set_float32_matmul_precision(saved_precision)
    for name, value in saved_matmul.items():
        setattr(cuda.matmul, name, value)


def test_the_switches_start_as_pytorchs():
    torch = pytest.importorskip("torch")
    for name in CUDNN_FLAGS:
        assert getattr(mg.backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    for name in MATMUL_FLAGS:
        assert (getattr(mg.backends.cuda.matmul, name)
                == getattr(torch.backends.cuda.matmul, name)), name
    assert mg.get_float32_matmul_precision() == "highest"


def test_a_script_that_sets_pytorchs_switches_runs():
    script = (
        "import minigrad as mg\n"
        "import minigrad.backends.cudnn as cudnn\n"
        "cudnn.benchmark = True\n"
        "cudnn.deterministic = True\n"
        "mg.backends.cudnn.enabled = False\n"
        "mg.backends.cudnn.allow_tf32 = False\n"
        "mg.backends.cuda.matmul.allow_tf32 = True\n"
        "mg.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False\n"
        "mg.set_float32_matmul_precision('medium')\n"
        "print(cudnn.benchmark, cudnn.deterministic, mg.backends.cudnn.enabled,\n"
        "      mg.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,\n"
        "      mg.get_float32_matmul_precision())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, check=True)
    assert result.stdout.split() == ["True", "True", "False", "False", "medium"]


def test_tf32_and_the_float32_matmul_precision_are_one_switch_as_in_pytorch():
    mg.set_float32_matmul_precision("high")
    assert mg.backends.cuda.matmul.allow_tf32
    mg.set_float32_matmul_precision("highest")
    assert not mg.backends.cuda.matmul.allow_tf32
    mg.backends.cuda.matmul.allow_tf32 = True
    assert mg.get_float32_matmul_precision() == "high"
    mg.backends.cuda.matmul.allow_tf32 = False
    assert mg.get_float32_matmul_precision() == "highest"


def test_matmuls_give_the_same_bits_whatever_the_switches_say():
    rng = np.random.default_rng(0)
    a, b = (mg.tensor(rng.standard_normal((33, 65)).astype(np.float32)) for _ in range(2))
    expected = (a @ b.T).numpy()
    mg.set_float32_matmul_precision("medium")
    mg.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    np.testing.assert_array_equal((a @ b.T).numpy(), expected)


@pytest.mark.parametrize("name", MATMUL_FLAGS)
def test_matmul_switches_take_bools_only_as_in_pytorch(name):
    with pytest.raises(RuntimeError, match=f"backends.cuda.matmul.{name} expects a bool, got 1"):
        setattr(mg.backends.cuda.matmul, name, 1)
    with pytest.raises(AttributeError):
        mg.backends.cuda.matmul.allow_tf33 = True


def test_an_unknown_precision_raises_naming_the_choices():
    with pytest.raises(ValueError, match="set_float32_matmul_precision: expected one of "
                                         r"\('highest', 'high', 'medium'\), got 'low'"):
        mg.set_float32_matmul_precision("low")
    assert mg.get_float32_matmul_precision() == "highest"


def test_cudnn_flags_sets_the_switches_for_a_block_and_restores_them():
    cudnn.benchmark = True
    with pytest.raises(KeyError):
        with cudnn.flags(enabled=False, benchmark=False, deterministic=True):
            assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, False, True)
            raise KeyError("left by an exception")
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, True, False)


def test_libraries_minigrad_does_not_use_are_not_available(monkeypatch):
    backends = mg.backends
    assert not backends.cudnn.is_available() and backends.cudnn.version() is None
    assert not backends.mps.is_available() and not backends.mps.is_built()
    assert not backends.mkldnn.is_available() and not backends.openmp.is_available()
    monkeypatch.setenv("MINIGRAD_FAKE_GPU", "1")
    assert backends.cuda.is_built()  # the stand-in is minigrad's GPU backend here
    monkeypatch.setenv("MINIGRAD_FAKE_GPU", "0")
    assert backends.cuda.is_built() == (importlib.util.find_spec("cupy") is not None)
