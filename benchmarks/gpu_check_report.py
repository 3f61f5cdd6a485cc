"""The head and the closing table of benchmarks/gpu_check.sh.

    python -m benchmarks.gpu_check_report versions [TEST_FILE...]   # versions, the GPU
                                                                    # (exit 2 without one)
    python -m benchmarks.gpu_check_report table LOGS [--quick]      # the closing table

The head also says whether numba-cuda finds the CUDA driver and NVVM (the Numba kernels
need both), and which of the check's tests compare with PyTorch when the machine's
PyTorch is not the version the tests' oracle is (TORCH_ORACLE).

Every section of gpu_check.sh leaves LOGS/<section>.log (its output) and
LOGS/<section>.status ("<exit status> <seconds> <time limit>"); the table has a row per
section and a row per target of the GPU check:
- `python -m train.toy_translate --device gpu` reaches >= 99% exact match in under 2 minutes;
- the paper-base training step takes at most 1.5x PyTorch CUDA eager's time.
A target whose section did not pass reads MISSED with the section's status (a time-out
is a miss, not a figure left unmeasured); only --quick leaves the targets unmeasured.
"""
from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# (file stem, what the row says), in the order gpu_check.sh runs them
SECTIONS = [
    ("gpu_tests", "GPU tests (test_gpu*.py, test_dlpack.py)"),
    ("op_suite", "op tests on the GPU (test_ops_*.py)"),
    ("nn_suite", "autograd, nn, models, decoding tests on the GPU"),
    ("numba_kernels", "Numba CUDA kernels in the ops (MINIGRAD_KERNELS=numba)"),
    ("toy_translate", "python -m train.toy_translate --device gpu"),
    ("bench_train", "training step, minigrad vs PyTorch CUDA"),
    ("bench_compile", "compiled step: mg.compile vs eager, torch.compile reduce-overhead"),
    ("bench_kernels", "GPU kernels vs twins and cuBLAS"),
    ("index_add", "embedding gradient: add.at vs segment sum vs one-hot"),
]
EXACT_MATCH_TARGET = 99.0  # percent
TOY_SECONDS_TARGET = 120.0
STEP_RATIO_TARGET = 1.5  # minigrad / PyTorch CUDA eager, paper-base
TORCH_ORACLE = "2.13.0"  # the PyTorch the tests compare with (.ci/run installs it)


# ----------------------------------------------------------------------------- versions


def versions(test_files: list[str]) -> int:
    """Print the Python, library and CUDA versions and the GPU; 2 when there is no GPU.
    `test_files`: the tests the check runs, for the PyTorch-version note."""
    print(f"python {platform.python_version()} ({sys.executable})")
    for package in ("numpy", "cupy", "numba", "numba-cuda", "torch", "pytest", "hypothesis"):
        print(f"{package} {_version(package)}")
    print(torch_note(_version("torch"), test_files))
    import minigrad as mg

    if not mg.cuda.is_available():
        print(f"gpu_check: no usable GPU: {mg.cuda.unavailable_reason()}", file=sys.stderr)
        return 2
    cupy = mg.backend.cupy_or_none()
    runtime = cupy.cuda.runtime
    if mg.backend.fake_gpu_requested():
        print(f"cupy: the stand-in {cupy.__name__} (MINIGRAD_FAKE_GPU=1)")
    else:
        print(f"CUDA runtime {runtime.runtimeGetVersion()}, driver "
              f"{runtime.driverGetVersion()}")
    torch = _import("torch")
    if torch is not None:
        print(f"torch CUDA {torch.version.cuda}, available: {torch.cuda.is_available()}")
    memory = runtime.getDeviceProperties(0)["totalGlobalMem"]
    print(f"GPU: {mg.cuda.get_device_name()}" + (f", {memory / 2**30:.0f} GiB" if memory else ""))
    print(numba_cuda_note(mg.backend.fake_gpu_requested()))
    return 0


def numba_cuda_note(on_stand_in: bool) -> str:
    """Whether numba-cuda finds the CUDA driver and NVVM, which its kernels need."""
    if on_stand_in:
        return "numba-cuda: not checked (on the stand-in the kernels run in its simulator)"
    consequence = "the numba_kernels and bench_kernels sections will fail"
    try:
        from numba import cuda
        from numba.cuda.cudadrv import nvvm
    except Exception as exc:  # a broken install is reported, not a traceback
        return f"numba-cuda: cannot import ({type(exc).__name__}: {exc}): {consequence}"
    driver = "found" if cuda.is_available() else f"NOT FOUND ({_one_line(cuda.cuda_error())})"
    try:
        library = "found, version {}.{}".format(*nvvm.NVVM().get_version())
    except Exception as exc:  # NvvmSupportError and its kin, by message
        library = f"NOT FOUND ({_one_line(str(exc))})"
    note = f"numba-cuda: CUDA driver {driver}; NVVM {library}"
    return note if "NOT FOUND" not in note else f"{note}: {consequence}"


def torch_note(installed: str, test_files: list[str]) -> str:
    """Which of `test_files`' tests compare with PyTorch, when the PyTorch installed is
    not TORCH_ORACLE (their failures may then come from the version alone)."""
    if installed == "missing":
        return f"torch: missing; the tests that compare with PyTorch {TORCH_ORACLE} skip"
    if installed.split("+")[0] == TORCH_ORACLE:
        return f"torch {installed}: the tests' oracle version"
    users = [name for path in test_files for name in torch_tests(path)]
    return (f"torch {installed}, not the oracle's {TORCH_ORACLE}: these tests compare with "
            f"PyTorch and may fail for the version alone: {', '.join(users) or 'none'}")


def torch_tests(path: str) -> list[str]:
    """`path` when the module imports torch, else its test functions that do."""
    if not os.path.exists(path):
        return []
    module = ast.parse(Path(path).read_text())
    if any(_imports_torch(node) for node in module.body):
        return [path]
    return [f"{path}::{node.name}" for node in module.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
            and any(_imports_torch(inner) for inner in ast.walk(node))]


def _imports_torch(node: ast.AST) -> bool:
    """`import torch`, `from torch ...` or `pytest.importorskip("torch")` at `node`."""
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "torch" for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == "torch"
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)] if isinstance(
        node, (ast.Assign, ast.Expr)) else []
    return any(getattr(call.func, "attr", None) == "importorskip" and call.args
               and getattr(call.args[0], "value", None) == "torch" for call in calls)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        module = _import(package.replace("-", "_"))
        return getattr(module, "__version__", "missing") if module is not None else "missing"


def _import(name: str):
    try:
        return importlib.import_module(name)
    except Exception:  # a broken install is reported as missing, not as a traceback
        return None


# ----------------------------------------------------------------------------- the table


@dataclass
class Section:
    name: str
    title: str
    status: str  # pass, FAIL (rc n), TIMEOUT (limit s), not run
    seconds: int | None
    log: str


def read_section(logs: Path, name: str, title: str) -> Section:
    status_file, log_file = logs / f"{name}.status", logs / f"{name}.log"
    log = log_file.read_text(errors="replace") if log_file.exists() else ""
    if not status_file.exists():
        return Section(name, title, "not run", None, log)
    rc, seconds, limit = (int(v) for v in status_file.read_text().split())
    if rc == 0:
        status = "pass"
    elif rc in (124, 137):
        status = f"TIMEOUT ({limit} s)"
    else:
        status = f"FAIL (rc {rc})"
    return Section(name, title, status, seconds, log)


def pytest_summary(log: str) -> str:
    """The closing 'N passed, M skipped in Xs' line of a pytest log; for a run stopped
    before it, the outcomes its verbose lines show."""
    lines = [line.strip(" =") for line in log.splitlines()
             if re.fullmatch(r"=* ?(\d+ \w+,? )+in [\d.]+s.*", line.strip())]
    if lines:
        return lines[-1]
    outcomes = re.findall(r"::\S+ (PASSED|FAILED|ERROR|SKIPPED)", log)
    if not outcomes:
        return _last_line(log)
    counts = {name: outcomes.count(name) for name in ("PASSED", "FAILED", "ERROR", "SKIPPED")}
    done = ", ".join(f"{n} {name.lower()}" for name, n in counts.items() if n)
    return f"stopped after {done}"


def toy_scores(log: str) -> tuple[float, float] | None:
    """(exact match %, BLEU) from toy_translate's output."""
    found = re.search(r"exact match ([\d.]+)%, BLEU ([\d.]+)", log)
    return (float(found.group(1)), float(found.group(2))) if found else None


def toy_progress(log: str) -> str:
    """How far training got: 'trained to step N in S s', else the last step logged."""
    found = re.search(r"trained to step (\d+) in (\d+) s", log)
    if found:
        return f"trained {found.group(1)} steps in {found.group(2)} s"
    steps = re.findall(r"(\d+)/(\d+) \[", log)
    return f"stopped at step {steps[-1][0]}/{steps[-1][1]}" if steps else "no training step"


def step_times(log: str) -> dict[str, dict[str, float]]:
    """{config: {framework: ms per step}} from bench_train's markdown table."""
    times: dict[str, dict[str, float]] = {}
    for line in log.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 4:
            continue
        try:
            milliseconds = float(cells[3])
        except ValueError:
            continue  # the header and the rule
        times.setdefault(cells[0], {})[cells[2]] = milliseconds
    return times


def kernel_speedups(log: str) -> list[float]:
    """The last column of bench_gpu_kernels' table (twin or cuBLAS time / kernel time)."""
    return [float(value) for value in re.findall(r"([\d.]+)x\s*\|\s*$", log, re.MULTILINE)]


def rows(logs: Path, quick: bool) -> list[list[str]]:
    sections = {name: read_section(logs, name, title) for name, title in SECTIONS}
    table = []
    for section in sections.values():
        table.append([section.title, section.status,
                      "-" if section.seconds is None else f"{section.seconds} s",
                      _result(section)])
    table += _targets(sections, quick)
    return table


def _result(section: Section) -> str:
    if section.name in ("gpu_tests", "op_suite", "nn_suite", "numba_kernels"):
        return pytest_summary(section.log)
    if section.name == "toy_translate":
        scores = toy_scores(section.log)
        progress = toy_progress(section.log)
        if scores is None:
            return progress
        return f"exact match {scores[0]:.1f}%, BLEU {scores[1]:.1f}; {progress}"
    if section.name in ("bench_train", "bench_compile"):
        parts = []
        for config, times in step_times(section.log).items():
            described = ", ".join(f"{framework} {ms:.1f}" for framework, ms in times.items())
            parts.append(f"{config}: {described} ms/step")
        return "; ".join(parts) or _last_line(section.log)
    if section.name == "index_add":
        fastest = index_add_fastest(section.log)
        described = "; ".join(f"{case}: {way}" for case, way in fastest.items())
        return f"fastest deterministic: {described}" if fastest else _last_line(section.log)
    speedups = kernel_speedups(section.log)
    if not speedups:
        return _last_line(section.log)
    return (f"{len(speedups)} cases, kernel speed-up {min(speedups):.2f}x to "
            f"{max(speedups):.2f}x (table above)")


def index_add_fastest(log: str) -> dict[str, str]:
    """{case: its fastest deterministic way} from bench_index_add's table (add.at counts
    only where it gave the same bits twice)."""
    fastest = {}
    for line in log.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 7 or not cells[3].replace(".", "").isdigit():
            continue
        times = dict(zip(("add.at", "segment sum", "one-hot"), map(float, cells[3:6])))
        if cells[6].split()[0] != "yes":
            del times["add.at"]
        fastest[cells[0]] = min(times, key=times.get)
    return fastest


def _targets(sections: dict, quick: bool) -> list[list[str]]:
    if quick:
        toy_verdict = step_verdict = "not measured (--quick)"
    else:
        toy_verdict = _toy_verdict(sections["toy_translate"])
        step_verdict = _step_verdict(sections["bench_train"])
    return [
        [f"target: toy_translate >= {EXACT_MATCH_TARGET:.0f}% exact match in < "
         f"{TOY_SECONDS_TARGET:.0f} s", "", "", toy_verdict],
        [f"target: paper-base step <= {STEP_RATIO_TARGET}x PyTorch CUDA eager", "", "",
         step_verdict],
    ]


def _toy_verdict(toy: Section) -> str:
    scores = toy_scores(toy.log)
    if scores is None or toy.status != "pass":
        return f"MISSED ({toy.status}): {toy_progress(toy.log)}"
    met = scores[0] >= EXACT_MATCH_TARGET and toy.seconds < TOY_SECONDS_TARGET
    return f"{'met' if met else 'MISSED'}: {scores[0]:.1f}% in {toy.seconds} s"


def _step_verdict(bench: Section) -> str:
    """The ratio when both paper-base rows were printed (bench_train prints each row as
    it is measured, so a later time-out keeps them); else why not."""
    times = step_times(bench.log).get("paper-base", {})
    if "minigrad" in times and "torch" in times:
        ratio = times["minigrad"] / times["torch"]
        return f"{'met' if ratio <= STEP_RATIO_TARGET else 'MISSED'}: {ratio:.2f}x"
    if "torch is not installed" in bench.log:
        return "not measured (needs PyTorch with CUDA)"
    return f"MISSED ({bench.status}): no paper-base row for " + (
        "torch" if "minigrad" in times else "minigrad")


def _last_line(log: str) -> str:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return lines[-1][:100] if lines else "(no output)"


def table(logs: Path, quick: bool) -> int:
    """Print the closing table; 0 when every section passed."""
    from benchmarks.timing import print_table

    body = rows(logs, quick)
    print_table(["section", "status", "time", "result"],
                [[cell.replace("|", "/") for cell in row] for row in body])
    statuses = [row[1] for row in body[:len(SECTIONS)]]
    return 0 if all(status == "pass" for status in statuses) else 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["versions"]:
        return versions(argv[1:])
    if argv[:1] == ["table"] and len(argv) in (2, 3):
        return table(Path(argv[1]), quick="--quick" in argv[2:])
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
