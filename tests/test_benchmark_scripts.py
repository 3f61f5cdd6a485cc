"""Every benchmark script runs to its table on little work (the figures are not checked:
timing is for the scripts themselves, run on a quiet machine; see docs/benchmarks.md)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_module(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                            text=True, timeout=600,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def table_rows(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("| ")]


def test_bench_modes_times_every_dispatched_op_and_the_reference_shapes():
    out = run_module("benchmarks.bench_modes", "--repeats", "1", "--config", "toy_translate")
    rows = table_rows(out)
    assert rows[0].startswith("| op") and len(rows) == 1 + 7 + 2
    assert sum("reference" in row for row in rows) == 2


def test_profile_step_prints_the_ops_of_one_step():
    out = run_module("benchmarks.profile_step", "--config", "toy_translate", "--steps", "1")
    names = [row.split("|")[1].strip() for row in table_rows(out)[1:]]
    assert {"Addmm", "MatMul", "Softmax", "NativeLayerNorm", "CrossEntropy"} <= set(names)
    assert "Copy:" in out


@pytest.mark.parametrize("case", ["gpt", "toy_translate"])
def test_profile_plan_times_the_recorded_steps_of_a_compiled_step(case):
    out = run_module("benchmarks.profile_plan", "--case", case, "--quick", "--steps", "2")
    names = [row.split("|")[1].strip() for row in table_rows(out)[1:]]
    assert {"MatMul.forward", "Addmm.forward", "fused kernels"} <= set(names)
    assert names[-1] == "(outside the plans)"
    if case == "gpt":  # the whole step is a plan: its optimizer too
        assert "Optimizer.step" in names


def test_bench_overhead_runs_every_case():
    out = run_module("benchmarks.bench_overhead", "--repeats", "20", "--block", "2")
    assert len(table_rows(out)) == 2 * (1 + 4)


def test_bench_compile_runs_every_case():
    out = run_module("benchmarks.bench_compile", "--quick", "--repeats", "2")
    rows = table_rows(out)
    assert rows[0].startswith("| case") and len(rows) == 1 + 7
    assert "minGPT-style step" in rows[3] and "kernel cache warm" in rows[-1]
    assert "allocator's defaults" in rows[4] and "the command's heap setting" in rows[5]


def test_bench_capture_memory_measures_eager_and_both_captures():
    out = run_module("benchmarks.bench_capture_memory", "--quick", "--layers", "1",
                     "--steps", "2")
    rows = table_rows(out)
    assert [row.split("|")[1].strip() for row in rows[1:]] == [
        "eager", "compiled from its first step", "compiled after an eager step"]


def test_bench_graph_memory_runs():
    out = run_module("benchmarks.bench_graph_memory", "--steps", "50", "--batch", "8")
    assert any(row.startswith("| minigrad") for row in table_rows(out))


def test_bench_rnn_runs_both_modules():
    out = run_module("benchmarks.bench_rnn", "--repeats", "1", "--bptt", "2")
    rows = table_rows(out)
    assert [row.split("|")[1].strip() for row in rows[1:]] == ["LSTM", "GRU"]


def test_bench_ops_times_every_op_of_the_method_table():
    pytest.importorskip("torch")
    # imported here: bench_ops imports torch, which the other scripts do without
    from benchmarks.bench_ops import WHY
    from benchmarks.bench_ops_cases import CASES

    out = run_module("benchmarks.bench_ops", "--size", "tiny", "--repeats", "1")
    timed = {row.split("|")[1].strip() for row in table_rows(out)}
    assert {case.op for case in CASES} <= timed
    assert "without a case" not in out and "results differ" not in out
    assert {key.split(":")[0] for key in WHY} <= {case.op for case in CASES}


def test_a_table_without_rows_is_its_header(capsys):
    """bench_ops --op prints its over-2x table even when every row of the op is within."""
    from benchmarks.timing import print_table

    print_table(["op", "ratio"], [])
    assert capsys.readouterr().out.splitlines() == ["| op | ratio |", "|----|-------|"]


def test_bench_conv_runs_one_case():
    out = run_module("benchmarks.bench_conv", "--repeats", "1", "--case", "LeNet conv1")
    assert any("LeNet conv1" in row for row in table_rows(out))


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="mpiexec is not installed")
def test_bench_distributed_runs_its_configurations():
    pytest.importorskip("mpi4py")
    out = run_module("benchmarks.bench_distributed", "--config", "toy_translate",
                     "--framework", "minigrad", "--steps", "1", "--repeats", "1")
    rows = [row for row in table_rows(out) if row.startswith("| toy_translate")]
    assert any("minigrad, 1 process" in row for row in rows)
    assert any("minigrad DDP" in row for row in rows)
