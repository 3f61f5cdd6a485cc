"""benchmarks/gpu_check.sh and its closing table (benchmarks/gpu_check_report.py): the
table is read from the sections' logs as a real GPU run writes them (the CI rehearsal on
the CuPy stand-in cannot produce a PyTorch CUDA row or a full toy run), a section that
ran out of time misses its target, the head names what the GPU machine may lack
(numba-cuda's driver and NVVM, the oracle's PyTorch), and the script refuses a machine
without a GPU in one line."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import gpu_check_report as report

ROOT = Path(__file__).resolve().parents[1]

PYTEST_LOG = """tests/test_gpu.py::test_a PASSED [ 50%]
tests/test_gpu.py::test_b PASSED [100%]
================ 96 passed, 1 skipped in 41.27s ================
"""
STOPPED_PYTEST_LOG = """tests/test_ops_grad.py::test_add PASSED [  1%]
tests/test_ops_grad.py::test_mul FAILED [  2%]
tests/test_ops_grad.py::test_div PASSED [  3%]
"""
TOY_LOG = """20000 training pairs, vocabularies 163 French / 98 English; Config(d_model=256)
train: 100%|##########| 4000/4000 [01:31<00:00, 43.7step/s, loss=1.1]
trained to step 4000 in 91 s
checkpoint saved to /tmp/x/toy_translate.safetensors
test set (500 unseen sentences): exact match 99.6%, BLEU 99.8
"""
TOY_TIMEOUT_LOG = "train:  61%|######    | 2450/4000 [01:59<01:15, 20.5step/s, loss=1.3]\n"
BENCH_TRAIN_LOG = """[paper-base] done
device: gpu
| config | d_model/layers/batch | framework | ms/step | target tok/s | minigrad/this time | step peak MiB | minigrad/this memory |
|---|---|---|---|---|---|---|---|
| paper-base | 512/6+6/b16xL16 | minigrad | 48.0 | 5,333 | - | - | - |
| paper-base | 512/6+6/b16xL16 | torch | 30.0 | 8,533 | 1.60 | - | - |
| toy_translate | 64/2+2/b128xL8 | minigrad | 20.0 | 51,200 | - | - | - |
| toy_translate | 64/2+2/b128xL8 | torch | 25.0 | 40,960 | 0.80 | - | - |
"""  # noqa: E501
BENCH_TRAIN_TIMEOUT_LOG = """device: gpu
| config | d_model/layers/batch | framework | ms/step | target tok/s | minigrad/this time | step peak MiB | minigrad/this memory |
| --- | --- | --- | --- | --- | --- | --- | --- |
| toy_translate | 64/2+2/b128xL8 | minigrad | 20.0 | 51,200 | - | - | - |
| toy_translate | 64/2+2/b128xL8 | torch | 25.0 | 40,960 | 0.80 | - | - |
"""  # noqa: E501
BENCH_COMPILE_LOG = """device: gpu
| config | d_model/layers/batch | framework | ms/step | target tok/s | minigrad/this time | step peak MiB | minigrad/this memory |
| --- | --- | --- | --- | --- | --- | --- | --- |
| toy_translate | 64/2+2/b128xL8 | minigrad | 20.0 | 51,200 | - | - | - |
| toy_translate | 64/2+2/b128xL8 | minigrad-compiled | 12.5 | 81,920 | 1.60 | - | - |
| toy_translate | 64/2+2/b128xL8 | torch | 25.0 | 40,960 | 0.80 | - | - |
| toy_translate | 64/2+2/b128xL8 | torch-compiled | 10.0 | 102,400 | 2.00 | - | - |
"""  # noqa: E501
INDEX_ADD_LOG = """embedding gradient on gpu (cupy), float32, us per call
| case | (ids, vocab, d) | most repeats | add.at us | segment sum us | one-hot us | same bits twice (add.at seg 1hot) |
|---|---|---|---|---|---|---|
| toy_translate gpu | (1024, 163, 256) | 170 | 20 | 150 | 30 | NO yes yes |
| paper-base bench | (256, 1000, 512) | 34 | 15 | 120 | 40 | yes yes yes |
| 4096 ids, 32k vocab | (4096, 32000, 512) | 390 | 60 | 200 | 2500 | NO yes yes |
"""  # noqa: E501
KERNELS_LOG = """GPU kernels vs twins on NVIDIA H200 (float32, us per call)
| case | twin/cuBLAS us | Numba kernel us | kernel speed-up |
|---|---|---|---|
| softmax (4096, 16) | 30.0 | 12.0 | 2.50x |
| matmul (1024, 1024, 1024) | 90.0 | 900.0 | 0.10x |
"""


def _write(logs: Path, name: str, log: str, rc: int, seconds: int, limit: int) -> None:
    (logs / f"{name}.log").write_text(log)
    (logs / f"{name}.status").write_text(f"{rc} {seconds} {limit}\n")


@pytest.fixture
def logs(tmp_path) -> Path:
    _write(tmp_path, "gpu_tests", PYTEST_LOG, 0, 60, 130)
    _write(tmp_path, "op_suite", STOPPED_PYTEST_LOG, 124, 130, 130)
    _write(tmp_path, "nn_suite", PYTEST_LOG, 1, 50, 130)
    _write(tmp_path, "numba_kernels", PYTEST_LOG, 0, 20, 130)
    _write(tmp_path, "toy_translate", TOY_LOG, 0, 104, 140)
    _write(tmp_path, "bench_train", BENCH_TRAIN_LOG, 0, 30, 45)
    _write(tmp_path, "bench_compile", BENCH_COMPILE_LOG, 0, 70, 100)
    _write(tmp_path, "bench_kernels", KERNELS_LOG, 0, 15, 25)
    _write(tmp_path, "index_add", INDEX_ADD_LOG, 0, 12, 30)
    return tmp_path


def test_the_table_reads_every_section_and_judges_the_targets(logs):
    rows = {row[0]: row[1:] for row in report.rows(logs, quick=False)}
    titles = dict(report.SECTIONS)
    assert rows[titles["gpu_tests"]] == ["pass", "60 s", "96 passed, 1 skipped in 41.27s"]
    assert rows[titles["op_suite"]] == ["TIMEOUT (130 s)", "130 s",
                                        "stopped after 2 passed, 1 failed"]
    assert rows[titles["nn_suite"]][0] == "FAIL (rc 1)"
    assert rows[titles["toy_translate"]][2] == (
        "exact match 99.6%, BLEU 99.8; trained 4000 steps in 91 s")
    assert rows[titles["bench_train"]][2] == (
        "paper-base: minigrad 48.0, torch 30.0 ms/step; "
        "toy_translate: minigrad 20.0, torch 25.0 ms/step")
    assert rows[titles["bench_compile"]][2] == (
        "toy_translate: minigrad 20.0, minigrad-compiled 12.5, torch 25.0, torch-compiled "
        "10.0 ms/step")
    assert rows[titles["bench_kernels"]][2].startswith("2 cases, kernel speed-up 0.10x to 2.50x")
    assert rows[titles["index_add"]][2] == (
        "fastest deterministic: toy_translate gpu: one-hot; paper-base bench: add.at; "
        "4096 ids, 32k vocab: segment sum")
    targets = [row for title, row in rows.items() if title.startswith("target")]
    assert targets[0][2] == "met: 99.6% in 104 s"
    assert targets[1][2] == "MISSED: 1.60x"


def test_a_slow_or_stopped_toy_run_misses_its_target(logs):
    _write(logs, "toy_translate", TOY_LOG, 0, 131, 140)
    assert report.rows(logs, quick=False)[-2][3] == "MISSED: 99.6% in 131 s"
    _write(logs, "toy_translate", TOY_TIMEOUT_LOG, 124, 140, 140)
    rows = report.rows(logs, quick=False)
    toy = next(row for row in rows if row[0] == dict(report.SECTIONS)["toy_translate"])
    assert toy[1:] == ["TIMEOUT (140 s)", "140 s", "stopped at step 2450/4000"]
    assert rows[-2][3] == "MISSED (TIMEOUT (140 s)): stopped at step 2450/4000"
    _write(logs, "toy_translate", TOY_LOG, 1, 100, 140)  # scores printed, then a crash
    assert report.rows(logs, quick=False)[-2][3].startswith("MISSED (FAIL (rc 1))")


def test_a_timed_out_bench_keeps_its_rows_and_misses_what_it_did_not_reach(logs):
    _write(logs, "bench_train", BENCH_TRAIN_TIMEOUT_LOG, 124, 45, 45)
    rows = report.rows(logs, quick=False)
    bench = next(row for row in rows if row[0] == dict(report.SECTIONS)["bench_train"])
    assert bench[1:] == ["TIMEOUT (45 s)", "45 s",
                         "toy_translate: minigrad 20.0, torch 25.0 ms/step"]
    assert rows[-1][3] == "MISSED (TIMEOUT (45 s)): no paper-base row for minigrad"
    _write(logs, "bench_train", BENCH_TRAIN_LOG + "Terminated\n", 124, 45, 45)
    assert report.rows(logs, quick=False)[-1][3] == "MISSED: 1.60x"  # measured before
    torch_missing = "(torch is not installed for gpu: left out)\n" + BENCH_TRAIN_LOG.replace(
        "| paper-base | 512/6+6/b16xL16 | torch | 30.0 | 8,533 | 1.60 | - | - |\n", "")
    _write(logs, "bench_train", torch_missing, 0, 30, 45)
    assert report.rows(logs, quick=False)[-1][3] == "not measured (needs PyTorch with CUDA)"


def test_sections_that_never_ran_are_listed_and_fail_the_check(tmp_path, capsys):
    _write(tmp_path, "gpu_tests", PYTEST_LOG, 0, 60, 130)
    assert report.table(tmp_path, quick=True) == 1
    out = capsys.readouterr().out
    assert out.count("not run") == len(report.SECTIONS) - 1
    assert "not measured (--quick)" in out


def test_the_script_is_valid_bash_and_names_every_section():
    script = (ROOT / "benchmarks" / "gpu_check.sh").read_text()
    subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / "gpu_check.sh")], check=True)
    for name, _ in report.SECTIONS:
        assert f"run_section {name} " in script


def test_the_head_names_the_tests_that_compare_with_another_pytorch(tmp_path):
    whole = tmp_path / "test_whole.py"
    whole.write_text('import pytest\ntorch = pytest.importorskip("torch")\n')
    some = tmp_path / "test_some.py"
    some.write_text('import pytest\n\n\ndef test_plain():\n    pass\n\n\n'
                    'def test_oracle():\n    torch = pytest.importorskip("torch")\n\n\n'
                    'def test_import():\n    from torch import nn\n')
    none = tmp_path / "test_none.py"
    none.write_text("def test_torch_free():\n    assert 'torch'\n")
    files = [str(whole), str(some), str(none)]
    note = report.torch_note("2.11.0+cu128", files)
    assert note.startswith(f"torch 2.11.0+cu128, not the oracle's {report.TORCH_ORACLE}")
    assert note.endswith(f"{whole}, {some}::test_oracle, {some}::test_import")
    assert report.torch_note(f"{report.TORCH_ORACLE}+cpu", files).endswith("oracle version")
    assert "skip" in report.torch_note("missing", files)


def test_the_oracle_version_is_the_one_ci_installs():
    assert f"torch=={report.TORCH_ORACLE}" in (ROOT / ".ci" / "run").read_text()


def test_the_head_says_whether_numba_cuda_finds_the_driver_and_nvvm(monkeypatch):
    cuda = pytest.importorskip("numba.cuda")
    from numba.cuda.cudadrv import nvvm

    class MissingNvvm:
        def __new__(cls):
            raise RuntimeError("libNVVM cannot be found.\nDo `conda install cudatoolkit`")

    class FoundNvvm:
        def get_version(self):
            return (2, 0)

    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(nvvm, "NVVM", MissingNvvm)
    assert report.numba_cuda_note(on_stand_in=False) == (
        "numba-cuda: CUDA driver found; NVVM NOT FOUND (libNVVM cannot be found. Do `conda "
        "install cudatoolkit`): the numba_kernels and bench_kernels sections will fail")
    monkeypatch.setattr(nvvm, "NVVM", FoundNvvm)
    assert report.numba_cuda_note(False) == "numba-cuda: CUDA driver found; NVVM found, version 2.0"
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    monkeypatch.setattr(cuda, "cuda_error", lambda: "CUDA driver library cannot be found.")
    assert "CUDA driver NOT FOUND (CUDA driver library" in report.numba_cuda_note(False)
    assert "not checked" in report.numba_cuda_note(on_stand_in=True)


@pytest.mark.usefixtures("without_cuda")
def test_without_a_gpu_the_check_prints_versions_and_exits_2():
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_check.sh")], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stdout.startswith("python ") and "numpy " in result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no usable GPU" in lines[0], result.stderr
