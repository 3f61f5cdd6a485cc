"""CPU instructions per call of the bench_overhead cases, counted by valgrind's callgrind.

    python -m benchmarks.bench_instructions [--calls 1000]

Unlike time, an instruction count does not move with the load of a shared machine, so it
shows the effect of a small change to the engine that timing noise would hide. Each case
runs in a fresh process twice, with 0 and with `--calls` calls after one warm-up call,
and the difference is divided by `--calls` (start-up and imports cancel out). OpenBLAS
is held to one thread so that an idle worker's spinning is not counted. Needs valgrind
(`apt-get install valgrind`); a call takes about 60 s per case and framework.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from benchmarks.bench_overhead import inputs, numpy_cases
from benchmarks.timing import print_table

_CHILD = """
import sys
from benchmarks import bench_overhead as b
framework, case, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
if framework == "numpy":
    run = b.numpy_cases(b.inputs())[case]
else:
    import importlib
    lib = importlib.import_module(framework)
    if framework == "torch":
        lib.set_num_threads(1)
    run = b.framework_cases(lib, b.inputs())[case]
run()
for _ in range(calls):
    run()
"""


def instructions(framework: str, case: str, calls: int) -> int:
    """Instructions executed by a process that imports `framework` and runs `case`
    `calls` times (after one warm-up call)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        result = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             "-c", _CHILD, framework, case, str(calls)],
            capture_output=True, text=True, check=True,
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    found = re.search(r"Collected : (\d+)", result.stderr) or re.search(
        r"refs:\s+([\d,]+)", result.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{result.stderr}")
    return int(found.group(1).replace(",", ""))


def per_call(framework: str, case: str, calls: int) -> float:
    return (instructions(framework, case, calls) - instructions(framework, case, 0)) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--framework", action="append", choices=["numpy", "minigrad", "torch"],
                        help="frameworks to count (default: all that import)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    frameworks = args.framework or ["numpy", "minigrad", "torch"]
    if "torch" in frameworks and not args.framework:
        try:
            import torch  # noqa: F401
        except ImportError:
            frameworks.remove("torch")
    rows = []
    for case in numpy_cases(inputs()):
        counts = {f: per_call(f, case, args.calls) for f in frameworks}
        row = [case] + [f"{counts[f] / 1e3:,.1f}" for f in frameworks]
        if "torch" in counts and "minigrad" in counts:
            row.append(f"{counts['minigrad'] / counts['torch']:.2f}")
        rows.append(row)
    headers = ["case"] + [f"{f} k-instructions/call" for f in frameworks]
    if "torch" in frameworks and "minigrad" in frameworks:
        headers.append("minigrad/torch")
    print_table(headers, rows)


if __name__ == "__main__":
    main()
