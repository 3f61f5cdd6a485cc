"""What the training commands ask of the C allocator (train/heap.py): freed memory kept
for the next step, so that a step's arrays do not fault in new pages. Each check runs in
a process of its own: the setting is the whole process's."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# five arrays of 1-4 MiB made and freed per "step"; the page faults of ten steps after
# three to warm up
STEPS = """
import resource, sys
import numpy as np
from train.heap import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def step():
    arrays = [np.ones(n, np.float32) for n in (2**18, 2**19, 2**20, 2**19, 2**18)]
    del arrays
for _ in range(3):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", STEPS, mode], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
    return int(done.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_kept_memory_spares_each_step_its_page_faults():
    # uncounted, each step's 12 MiB are mostly new pages again (4 KiB each)
    assert _faults("plain") > 5_000
    assert _faults("keep") < 100

