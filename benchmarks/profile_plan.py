"""Where a compiled step's replay spends its time, step by step.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.profile_plan [--case gpt] [--steps 20]

Compiles one of bench_compile.py's steps (the character-level GPT's or the minGPT-style
GPT's whole training step, or toy_translate's step with its model compiled), captures it,
then replays it `--steps` times with a clock read before every recorded step of every
plan (forward and backward), and prints per step: the time of each kind of step (an op's
forward, a NumPy function, a fused kernel, the optimizer's Python, a guard), its calls
and its share of the step's wall time. What runs outside the plans (toy_translate's loss
and optimizer, the calls' own Python) is the last row.

The clock is read by a copy of each plan's generated replay function (codegen.py) with
one more statement at each `# step N` comment, so the plan itself is unchanged.
"""
from __future__ import annotations

import argparse
import os
import re
import time
from collections import defaultdict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import minigrad as mg  # noqa: E402
from benchmarks.bench_compile import GPT, QUICK_GPT, gpt_step, translate_step  # noqa: E402
from benchmarks.timing import print_table  # noqa: E402
from minigrad.compile.steps import Call, Folded, Fused, Guard, Opaque, Unit  # noqa: E402

_STEP_COMMENT = re.compile(r"^(\s+)# step (\d+)$")


def compiled_step(case: str, quick: bool):
    """(step, compiled function): a step of no arguments and the mg.compile object
    whose plans it replays."""
    if case == "toy_translate":
        _, step = translate_step(quick)
        return step, step.forward._compiled_forward
    compiled = mg.compile(gpt_step(mg, QUICK_GPT if quick else GPT,
                                   style="mingpt" if case == "mingpt" else "char_lm"),
                          fullgraph=True)
    return compiled, compiled


def kind(step) -> str:
    """What a recorded step runs, as one row of the table."""
    if isinstance(step, Fused):
        return "fused kernels"
    if isinstance(step, Unit):
        return f"{step.cls.__name__}.forward"
    if isinstance(step, Guard):
        return "guards"
    if isinstance(step, Folded):
        return "folded (made once)"
    if isinstance(step, (Call, Opaque)):
        return step.label
    return "set .grad"


def plans_of(compiled) -> list:
    """Every plan of a compiled function: the forwards and their recorded backwards."""
    plans = []
    for entries in compiled._plans.values():
        for entry in entries:
            plans.append(entry.plan)
            plans += [backward.plan for backward in entry.backwards]
    return plans


def time_steps(plan, clock: list) -> None:
    """Make `plan` append (plan, step index, time) to `clock` before each step, and
    (plan, -1, time) after the last one."""
    lines = []
    for line in plan.replay.source.splitlines():
        match = _STEP_COMMENT.match(line)
        if match:
            lines.append(f"{match.group(1)}_clock.append((_plan, {match.group(2)}, _now()))")
        if line == "def output(slots):":  # the end of replay(): its last step is done
            lines.insert(len(lines) - 2, "    _clock.append((_plan, -1, _now()))")
        lines.append(line)
    namespace = {**plan.replay._globals, "_clock": clock, "_now": time.perf_counter,
                 "_plan": plan}
    exec(compile("\n".join(lines) + "\n", "<timed replay>", "exec"), namespace)  # noqa: S102
    plan.replay.function = namespace["replay"]


def profile(case: str, steps: int, quick: bool) -> None:
    step, compiled = compiled_step(case, quick)
    for _ in range(3):  # the captures (one plan without the optimizer's state, one with)
        step()
    clock: list = []
    for plan in plans_of(compiled):
        time_steps(plan, clock)
    seconds: dict = defaultdict(float)
    calls: dict = defaultdict(int)
    wall = 0.0
    for _ in range(steps):
        clock.clear()
        start = time.perf_counter()
        step()
        wall += time.perf_counter() - start
        for (plan, index, began), (next_plan, _, ended) in zip(clock, clock[1:]):
            if plan is next_plan and index >= 0:
                name = kind(plan.steps[index])
                seconds[name] += ended - began
                calls[name] += 1
    wall /= steps
    rows = [[name, f"{calls[name] / steps:.0f}", f"{seconds[name] / steps * 1e3:.3f}",
             f"{seconds[name] / steps / wall:.1%}"]
            for name in sorted(seconds, key=lambda n: -seconds[n])]
    outside = wall - sum(seconds.values()) / steps
    rows.append(["(outside the plans)", "", f"{outside * 1e3:.3f}", f"{outside / wall:.1%}"])
    print(f"{case}: one compiled step, {wall * 1e3:.2f} ms wall (mean of {steps} steps, a "
          f"clock read before each recorded step), "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    print_table(["recorded step", "calls", "ms", "share of step"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="gpt", choices=["gpt", "mingpt", "toy_translate"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small models (for tests)")
    args = parser.parse_args()
    profile(args.case, args.steps, args.quick)


if __name__ == "__main__":
    main()
