"""Mutation testing: plant one bug at a time and check that the tests catch each.

    python -m tools.mutants                       # every mutant of tools/mutant_table/
    python -m tools.mutants --only NAME [NAME ...]
    python -m tools.mutants --sample 8 --seed 17  # a rotating sample (CI passes the day)
    python -m tools.mutants --jobs 2 --seeds 0 1 2
    python -m tools.mutants --list                # the mutants' names and files
    python -m tools.mutants --baseline            # their tests on the unchanged tree

For each mutant the repository's files (`git ls-files`: tracked files and untracked ones
that are not ignored; never .git) are copied to a temporary folder, the mutant's one
textual replacement is made there, and the tests that should catch it run in that copy:
`python -m pytest <tests> -x -q -p no:cacheprovider --hypothesis-seed=N`, with PYTHONPATH
pointing at the copy, once per seed N (and `-p no_shrinking`, tools/plugins/: a failing
example is reported as found, not shrunk). A mutant is caught only if every seed's run fails
(so a bug found by a lucky draw does not count); a failure that no Hypothesis example led
to (no "Falsifying example", or "Failing test case" in newer Hypothesis) would recur at
any seed, so the other seeds are skipped.
It survives when one run passes, and is an error when pytest cannot run the tests (a test
id that no longer exists); a run past --timeout counts as caught. The table printed at the
end gives each mutant, its file, the first test that failed, the seeds run and the time
taken; the exit status is 1 if any mutant survived or erred. docs/mutation_testing.md
has the last full run.

Each run gets its own Hypothesis example database (so one seed's failure is not replayed
by the next). The copies of one job reuse one folder, so compiled bytecode and Numba's
kernel cache (kept outside the copy) carry over from one mutant to the next; a mutant of a
file that Numba compiles gets an empty kernel cache instead, since Numba's cache does not
notice a change in a kernel that another cached kernel calls.
"""
from __future__ import annotations

import argparse
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from tools.mutant_table import MUTANTS, Mutant

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = Path(__file__).resolve().parent / "plugins"  # pytest plugins of the test runs
DEFAULT_SEEDS = (0, 1, 2)
DEFAULT_TIMEOUT = 900  # seconds per pytest run; a mutant that hangs the tests is caught
# a file Numba compiles: its kernels' cached machine code must not outlive a mutant
_NUMBA_SOURCE = re.compile(r"^\s*(from numba\b|import numba\b)|^\s*@kernel\b", re.M)
# "FAILED <node id> - <message>"; a parametrized id may hold spaces, inside its brackets
_FAILURE_LINE = re.compile(r"^(FAILED|ERROR) ([^\s\[]+(?:\[.*?\])?)(?= - |$)", re.M)


class MutantError(Exception):
    """A mutant that cannot be planted: its original text is not exactly once in its file."""


@dataclass(frozen=True)
class Outcome:
    """What the tests did to one mutant. status: "caught", "survived" or "error";
    detail: the first failing test id, the seed whose run passed, or what went wrong;
    seeds: the hypothesis seeds whose runs were made."""

    mutant: Mutant
    status: str
    detail: str
    seconds: float
    seeds: tuple[int, ...] = ()


# ----------------------------------------------------------------------------- the copy


def tree_files(root: Path) -> list[str]:
    """The repository's files, relative to root: tracked and untracked-but-not-ignored,
    without those deleted from the working tree."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout
    names = dict.fromkeys(name for name in listing.split("\0") if name)
    return [name for name in names
            if not name.startswith(".git/") and (root / name).is_file()]


def copy_tree(root: Path, files: Sequence[str], destination: Path) -> None:
    """A fresh copy of `files` under `destination` (times kept, so caches stay valid)."""
    if destination.exists():
        shutil.rmtree(destination)
    for name in files:
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copy2(root / name, target)
        except FileNotFoundError:  # deleted since it was listed
            continue


def plant(tree: Path, mutant: Mutant) -> None:
    """Make the mutant's one replacement in the copy at `tree`."""
    path = tree / mutant.path
    text = path.read_text()
    count = text.count(mutant.original)
    if count != 1:
        raise MutantError(f"{mutant.name}: its original text occurs {count} times in "
                          f"{mutant.path}, expected exactly once")
    path.write_text(text.replace(mutant.original, mutant.replacement))


def compiled_by_numba(path: Path) -> bool:
    """Whether Numba compiles (and caches) code of this Python file."""
    return bool(_NUMBA_SOURCE.search(path.read_text()))


# ----------------------------------------------------------------------------- pytest


def pytest_command(tests: Sequence[str], seed: int) -> list[str]:
    """The pytest run of `tests` under one hypothesis seed, stopping at the first failure."""
    return [sys.executable, "-m", "pytest", *tests, "-x", "-q", "-p", "no:cacheprovider",
            "-p", "no_shrinking", f"--hypothesis-seed={seed}"]


def _example_reported(output: str) -> bool:
    """Whether Hypothesis reported a failing example (its wording changed in 6.16x)."""
    return "Falsifying example" in output or "Failing test case" in output


def first_failure(output: str) -> str | None:
    """The first test id pytest's summary lists as FAILED or ERROR, else None."""
    match = _FAILURE_LINE.search(output)
    return match.group(2) if match else None


@dataclass
class _Slot:
    """The folders one job reuses: the copy, and the caches kept outside it."""

    folder: Path

    @property
    def tree(self) -> Path:
        return self.folder / "tree"

    def environment(self, numba_cache: Path, examples: Path) -> dict:
        """The environment of a test run in the copy: imports from the copy first, the
        caches, and `examples` as Hypothesis's example database."""
        env = dict(os.environ)
        inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join([str(self.tree), str(PLUGINS)] + inherited)
        # bytecode (pytest's rewritten tests too) is written, outside the copy, and reused
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(self.folder / "bytecode")
        env["NUMBA_CACHE_DIR"] = str(numba_cache)
        env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(examples)
        return env


def run_mutant(root: Path, mutant: Mutant, slot: _Slot, seeds: Sequence[int],
               timeout: float) -> Outcome:
    """Copy, plant, and run the mutant's tests once per seed, stopping at the first seed
    whose run passes (or after a failure that no drawn example led to). The files are
    listed anew for each copy: the tree may change while the mutants run."""
    start = time.monotonic()
    copy_tree(root, tree_files(root), slot.tree)
    try:
        plant(slot.tree, mutant)
    except MutantError as exc:
        return Outcome(mutant, "error", str(exc), time.monotonic() - start)
    numba_cache = slot.folder / "numba"
    if compiled_by_numba(slot.tree / mutant.path):
        numba_cache = slot.folder / "numba-of-this-mutant"
        shutil.rmtree(numba_cache, ignore_errors=True)
    caught_by, ran = None, ()
    for seed in seeds:
        run = _run_tests(mutant, slot, seed, numba_cache, timeout)
        ran += (seed,)
        if run.status != "caught":
            return Outcome(mutant, run.status, run.detail, time.monotonic() - start, ran)
        caught_by = caught_by or run.detail
        if not run.drawn:  # a failure no Hypothesis example led to is the same at any seed
            break
    return Outcome(mutant, "caught", caught_by, time.monotonic() - start, ran)


class _Run(NamedTuple):
    """One pytest run: its status and detail (as Outcome's), and whether the failure came
    from a Hypothesis example (so that another seed could have missed it)."""

    status: str
    detail: str
    drawn: bool = False


def _run_tests(mutant: Mutant, slot: _Slot, seed: int, numba_cache: Path,
               timeout: float) -> _Run:
    examples = Path(tempfile.mkdtemp(prefix="examples-", dir=slot.folder))
    try:
        result = subprocess.run(
            pytest_command(mutant.tests, seed), cwd=slot.tree,
            env=slot.environment(numba_cache, examples),
            capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return _Run("caught", f"timeout: seed {seed} ran past {timeout:.0f} s")
    finally:
        shutil.rmtree(examples, ignore_errors=True)
    output = result.stdout + result.stderr
    if result.returncode == 0:
        return _Run("survived", f"seed {seed} passed")
    failed = first_failure(output)
    if result.returncode in (1, 2) and failed is not None:
        return _Run("caught", failed, drawn=_example_reported(output))
    tail = " | ".join(output.strip().splitlines()[-3:])
    return _Run("error", f"pytest exit {result.returncode} (seed {seed}): {tail}")


def run_all(root: Path, mutants: Sequence[Mutant], seeds: Sequence[int] = DEFAULT_SEEDS,
            jobs: int = 1, timeout: float = DEFAULT_TIMEOUT,
            report: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every mutant's outcome, in the order given; `jobs` mutants run at a time."""
    with tempfile.TemporaryDirectory(prefix="minigrad-mutants-") as scratch:
        slots: queue.Queue[_Slot] = queue.Queue()
        for index in range(jobs):
            slots.put(_Slot(Path(scratch) / f"job{index}"))

        def run(mutant: Mutant) -> Outcome:
            slot = slots.get()
            try:
                outcome = run_mutant(root, mutant, slot, seeds, timeout)
            finally:
                slots.put(slot)
            if report is not None:
                report(outcome)
            return outcome

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(run, mutants))


def run_baseline(root: Path, mutants: Sequence[Mutant], seeds: Sequence[int]) -> int:
    """The mutants' tests on an unchanged copy, once per seed: all must pass, or a mutant
    'caught' by them proves nothing. Returns pytest's worst exit status."""
    tests = list(dict.fromkeys(test for mutant in mutants for test in mutant.tests))
    with tempfile.TemporaryDirectory(prefix="minigrad-baseline-") as scratch:
        slot = _Slot(Path(scratch))
        copy_tree(root, tree_files(root), slot.tree)
        worst = 0
        for seed in seeds:
            examples = Path(tempfile.mkdtemp(prefix="examples-", dir=scratch))
            command = [c for c in pytest_command(tests, seed) if c != "-x"]  # run them all
            environment = slot.environment(slot.folder / "numba", examples)
            result = subprocess.run(command, cwd=slot.tree, env=environment)
            worst = max(worst, result.returncode)
        return worst


# ----------------------------------------------------------------------------- report


def format_table(outcomes: Sequence[Outcome]) -> str:
    """A Markdown table: mutant, file, caught by (or why not), the seeds run, seconds."""
    rows = [("mutant", "file", "caught by", "seeds", "seconds")]
    for o in outcomes:
        verdict = o.detail if o.status == "caught" else f"{o.status.upper()}: {o.detail}"
        rows.append((o.mutant.name, o.mutant.path, verdict, " ".join(map(str, o.seeds)),
                     f"{o.seconds:.0f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |"
             for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def select(mutants: Sequence[Mutant], only: Sequence[str] | None, sample: int | None,
           seed: int) -> list[Mutant]:
    """The mutants named by --only, or a sample of `sample` drawn with `seed`, or all."""
    chosen = list(mutants)
    if only:
        by_name = {m.name: m for m in mutants}
        unknown = [name for name in only if name not in by_name]
        if unknown:
            raise SystemExit(f"mutants: no mutant named {', '.join(unknown)}; "
                             "python -m tools.mutants --list shows them")
        chosen = [by_name[name] for name in only]
    if sample is not None and sample < len(chosen):
        picked = set(random.Random(seed).sample(range(len(chosen)), sample))
        chosen = [m for i, m in enumerate(chosen) if i in picked]
    return chosen


def main(argv: Sequence[str] | None = None, root: Path = ROOT,
         table: Sequence[Mutant] = MUTANTS) -> int:
    """The command line (see the module docstring); `root` and `table` for tests."""
    parser = argparse.ArgumentParser(prog="python -m tools.mutants", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these mutants only")
    parser.add_argument("--sample", type=int, metavar="N", help="run N mutants drawn at random")
    parser.add_argument("--seed", type=int, default=0, help="the draw of --sample (default 0)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS),
                        metavar="N", help="hypothesis seeds; every one must catch a mutant")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at a time")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds per pytest run (default %(default)s)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--baseline", action="store_true",
                        help="run the chosen mutants' tests on the unchanged tree and exit")
    args = parser.parse_args(argv)
    if args.sample is not None and args.sample < 1 or args.jobs < 1:
        parser.error("--sample and --jobs must be positive")
    chosen = select(table, args.only, args.sample, args.seed)
    if args.list:
        for m in chosen:
            print(f"{m.name:40} {m.path}")
        return 0
    if args.baseline:
        status = run_baseline(root, chosen, args.seeds)
        verdict = "pass" if status == 0 else f"FAIL (pytest exit {status})"
        print(f"baseline: the tests of {len(chosen)} mutants {verdict} on the unchanged tree "
              f"under hypothesis seeds {' '.join(map(str, args.seeds))}")
        return status
    start = time.monotonic()

    def progress(outcome: Outcome) -> None:
        print(f"{outcome.status:8} {outcome.mutant.name} ({outcome.seconds:.0f} s) "
              f"{outcome.detail}", file=sys.stderr, flush=True)

    outcomes = run_all(root, chosen, args.seeds, args.jobs, args.timeout, progress)
    print(format_table(outcomes))
    caught = sum(o.status == "caught" for o in outcomes)
    print(f"\n{caught} of {len(outcomes)} mutants caught under hypothesis seeds "
          f"{' '.join(map(str, args.seeds))} in {(time.monotonic() - start) / 60:.1f} min "
          f"({args.jobs} job{'s' if args.jobs > 1 else ''})")
    return 0 if caught == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
