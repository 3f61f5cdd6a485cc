"""Runs tests/cuda_sim_cases.py (the GPU kernels against their twins) in Numba's CUDA
simulator. The simulator is chosen when numba.cuda is first imported, so the cases run in
a fresh interpreter with NUMBA_ENABLE_CUDASIM=1; this keeps them in every plain
`python -m pytest` run, CI included, on machines without a GPU."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

CASES = Path(__file__).with_name("cuda_sim_cases.py")
ROOT = CASES.parent.parent


def test_cuda_kernels_match_their_twins_in_the_simulator():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
         str(CASES)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200,
    )
    report = result.stdout[-6000:] + result.stderr[-3000:]
    assert result.returncode == 0, report
    summary = result.stdout.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 10, f"the simulator cases did not run:\n{report}"
    assert "skipped" not in summary, report
