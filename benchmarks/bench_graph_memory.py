"""Memory of a training loop that keeps its losses, minigrad against PyTorch.

    python -m benchmarks.bench_graph_memory [--steps 300] [--batch 512]

An MLP 64-256-256-10 trains with Adam on random batches and appends every step's loss
tensor to a list, as many training scripts do to plot or average them later. Once
backward() has run, a loss must keep nothing of its step's graph alive, so the resident
set should stop growing after the first steps. Each framework runs in a child process of
its own (one BLAS thread, so that thread pools do not differ); the table shows its RSS at
steps 50, 150 and 300 and the growth from step 50 to the end.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from benchmarks.timing import print_table

CHECKPOINTS = (50, 150, 300)

_CHILD = r"""
import json, resource, sys
steps, batch, framework = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20

if framework == "minigrad":
    import minigrad as mg
    from minigrad import nn, optim
    import minigrad.nn.functional as F
    mg.manual_seed(0)
    randn, randint = mg.randn, mg.randint
else:
    import torch as mg
    from torch import nn, optim
    import torch.nn.functional as F
    mg.manual_seed(0)
    randn, randint = mg.randn, mg.randint

model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                      nn.Linear(256, 10))
optimizer = optim.Adam(model.parameters(), lr=1e-3)
losses, readings = [], {}
for step in range(1, steps + 1):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(randn(batch, 64)), randint(0, 10, (batch,)))
    loss.backward()
    optimizer.step()
    losses.append(loss)
    if step in {checkpoints}:
        readings[step] = rss_mib()
print(json.dumps(readings))
"""


def measure(framework: str, steps: int, batch: int) -> dict[int, float]:
    """RSS in MiB at each checkpoint step, from a fresh child process."""
    code = _CHILD.replace("{checkpoints}", repr(set(c for c in CHECKPOINTS if c <= steps)))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-c", code, str(steps), str(batch), framework],
                            capture_output=True, text=True, env=env, check=True)
    return {int(k): v for k, v in json.loads(result.stdout.strip().splitlines()[-1]).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    frameworks = ["minigrad"]
    try:
        import torch  # noqa: F401

        frameworks.append("torch")
    except ImportError:
        print("(PyTorch is not installed: minigrad only)")
    steps = [c for c in CHECKPOINTS if c <= args.steps]
    rows = []
    for framework in frameworks:
        readings = measure(framework, args.steps, args.batch)
        growth = readings[steps[-1]] - readings[steps[0]]
        rows.append([framework, *(f"{readings[s]:.0f}" for s in steps), f"{growth:+.1f}"])
    print(f"RSS in MiB of an MLP 64-256-256-10, Adam, batch {args.batch}, every loss kept")
    print_table(["framework", *(f"step {s}" for s in steps), f"growth {steps[0]}-{steps[-1]}"],
                rows)


if __name__ == "__main__":
    main()
