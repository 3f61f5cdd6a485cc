"""The CuPy stand-in's modules beside its arrays: random (CuPy's API and rules), cuda
(device, runtime, streams, events), the memory pool, DLPack capsules, and the switch
MINIGRAD_FAKE_GPU=1 that makes the stand-in minigrad's GPU. These run on every machine:
the stand-in needs no GPU."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from minigrad.testing import fake_cupy as cp

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def x():
    return cp.asarray(np.arange(6.0).reshape(2, 3))


# ----------------------------------------------------------------------------- random, cuda, memory


def test_random_has_cupys_api_and_rules():
    cp.random.seed(3)
    first = cp.random.uniform(-1.0, 1.0, (4,), dtype=np.float32)
    cp.random.seed(3)
    assert type(first) is cp.ndarray and first.dtype == np.float32
    assert cp.random.uniform(-1.0, 1.0, (4,), dtype=np.float32).tolist() == first.tolist()
    assert cp.random.standard_normal().shape == ()  # a 0-d array, never a host scalar
    assert cp.random.randint(0, 5, (3,)).dtype == np.int64
    with pytest.raises(TypeError, match="float32 and float64"):
        cp.random.random_sample((2,), dtype=np.float16)
    with pytest.raises(ValueError, match="2\\*\\*64"):
        cp.random.seed(-1)
    philox = cp.random.RandomState(7, method=cp.cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
    assert philox.normal(size=(2,)).tolist() != cp.random.RandomState(7).normal(size=(2,)).tolist()
    generator = cp.random.default_rng(0)
    assert generator.standard_normal((2, 3), dtype=np.float32).dtype == np.float32


def test_cuda_device_runtime_streams_and_events():
    assert cp.cuda.runtime.getDeviceCount() == 1
    assert b"stand-in" in cp.cuda.runtime.getDeviceProperties(0)["name"]
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="invalid device"):
        cp.cuda.Device(1)
    cp.cuda.Device().synchronize()
    assert cp.cuda.get_current_stream() is cp.cuda.Stream.null and cp.cuda.Stream.null.ptr == 0
    with cp.cuda.Stream(non_blocking=True) as stream:
        assert cp.cuda.get_current_stream() is stream and stream.ptr != 0
    assert cp.cuda.get_current_stream() is cp.cuda.Stream.null
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    end.record()
    assert cp.cuda.get_elapsed_time(start, end) >= 0


def test_memory_pool_counts_live_arrays_and_keeps_freed_blocks():
    gc.collect()
    gc.disable()  # no other array may be collected while the pool is being watched
    try:
        pool = cp.get_default_memory_pool()
        pool.free_all_blocks()
        used, held = pool.used_bytes(), pool.total_bytes()
        array = cp.zeros(1000, dtype=np.float32)  # 4000 bytes, rounded up to 4096
        assert pool.used_bytes() == used + 4096 and pool.total_bytes() == held + 4096
        view = array[::2]  # a view allocates nothing
        assert pool.used_bytes() == used + 4096
        del array, view
        assert pool.used_bytes() == used and pool.total_bytes() == held + 4096
        pool.free_all_blocks()
        assert pool.total_bytes() == used
    finally:
        gc.enable()


# ----------------------------------------------------------------------------- DLPack


def test_dlpack_capsules_say_cuda_and_host_libraries_refuse_them(x):
    assert x.__dlpack_device__() == (2, 0)
    with pytest.raises((RuntimeError, BufferError), match="device"):
        np.from_dlpack(x)
    shared = cp.from_dlpack(x)
    shared[0, 0] = 42.0
    assert x[0, 0].item() == 42.0
    host = np.from_dlpack(_HostRequest(x))
    host[0, 1] = -1.0  # a host copy: dl_device=(kDLCPU, 0) asks for one
    assert x[0, 1].item() == 1.0
    with pytest.raises(TypeError, match="CPU arrays cannot be directly imported"):
        cp.from_dlpack(np.ones(2))


class _HostRequest:
    """A consumer asking the producer for host memory, as NumPy >= 2.1 may."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, max_version=None, **kwargs):
        return self.array.__dlpack__(max_version=max_version, dl_device=(1, 0), copy=True)

    def __dlpack_device__(self):
        return (1, 0)


# ----------------------------------------------------------------------------- the switch


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    environment.pop("MINIGRAD_FAKE_GPU", None)
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120, check=True)


def test_minigrad_fake_gpu_makes_the_stand_in_the_gpu_and_says_so_once():
    code = ("import sys, minigrad as mg\n"
            "print('fake_cupy' in str(sys.modules))\n"
            "print(mg.cuda.is_available(), mg.cuda.device_count())\n"
            "print(mg.cuda.get_device_name())\n"
            "x = mg.ones(3, device='gpu') * 2\n"
            "print(type(x.array).__module__, x.device, x.sum().item())\n")
    result = _python(code, MINIGRAD_FAKE_GPU="1")
    lines = result.stdout.splitlines()
    assert lines[0] == "False"  # importing minigrad does not load the stand-in
    assert lines[1] == "True 1"
    assert "stand-in" in lines[2] and "no GPU" in lines[2]
    assert lines[3] == "minigrad.testing.fake_cupy._array cuda:0 6.0"
    assert result.stderr.count("\n") == 1 and "no GPU is used" in result.stderr


def test_without_the_switch_the_stand_in_is_never_used():
    result = _python("import minigrad as mg; print(mg.cuda.is_available())",
                     MINIGRAD_FAKE_GPU="0")
    if result.stdout.strip() == "True":
        pytest.skip("this machine has a real GPU")
    assert result.stdout.strip() == "False" and result.stderr == ""
