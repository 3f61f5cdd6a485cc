"""The CI script runs every GPU-only test on the CuPy stand-in. Such a test skips in the
plain run (no CUDA there), so a test file of them that .ci/run does not name would never
run anywhere without a GPU."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPU_ONLY = re.compile(r"@requires_cuda\b|skipif\(not mg\.(backend\.is_cuda_available|cuda\."
                      r"is_available)\(\)")
FOLLOWS_THE_DEVICE = re.compile(r"^pytestmark = .*pytest\.mark\.device", re.MULTILINE)


def _files_with_gpu_only_tests() -> list[str]:
    files = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        source = path.read_text()
        if GPU_ONLY.search(source) and not FOLLOWS_THE_DEVICE.search(source):
            files.append(f"tests/{path.name}")
    return files


def test_every_file_of_gpu_only_tests_runs_on_the_stand_in_in_ci():
    script = (ROOT / ".ci" / "run").read_text()
    files = _files_with_gpu_only_tests()
    assert "tests/test_gpu.py" in files  # the search finds what it looks for
    missing = [name for name in files if name not in script]
    assert not missing, f".ci/run never runs the GPU-only tests of {missing}"
