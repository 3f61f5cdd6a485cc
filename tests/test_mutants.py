"""The mutation-testing table and its runner (tools/mutant_table/, tools/mutants.py).

The table must follow the code: every mutant's original text occurs exactly once in its
file today, so a refactor that moves the code fails here, loudly, instead of leaving the
runner to plant nothing; and its tests name files and functions that exist. The runner is
checked end to end on a tiny synthetic repository: a bug its test catches is reported as
caught by that test (after one run for a fixed test, a run per seed for a drawn one), one
no test sees as a survivor (with exit status 1), and a mutant whose text is gone as an
error before any test runs.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tools import mutants
from tools.mutant_table import MUTANTS, Mutant

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_each_mutant_plants_one_change_in_code_that_exists(mutant):
    text = (ROOT / mutant.path).read_text()
    count = text.count(mutant.original)
    assert count == 1, (f"{mutant.name}: its original text occurs {count} times in "
                        f"{mutant.path}; update tools/mutant_table to the code as it is now")
    assert mutant.replacement != mutant.original


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_each_mutant_names_tests_that_exist(mutant):
    assert mutant.tests, f"{mutant.name} names no test"
    for test in mutant.tests:
        path, _, function = test.partition("::")
        assert (ROOT / path).is_file(), f"{mutant.name}: no test file {path}"
        name = function.split("[")[0]
        if name:  # a test is defined, or made by a factory: test_x = error_test(...)
            assert re.search(rf"^(def {name}\(|{name} = )", (ROOT / path).read_text(), re.M), \
                f"{mutant.name}: {path} defines no {name}"


def test_the_table_has_many_distinct_mutants():
    names = [m.name for m in MUTANTS]
    assert len(set(names)) == len(names)
    assert len(MUTANTS) >= 60


def test_first_failure_reads_pytests_summary():
    output = ("....F\n=== short test summary info ===\n"
              "FAILED tests/test_a.py::test_b[x - y] - AssertionError: 1 - 2\n"
              "FAILED tests/test_a.py::test_c\n")
    assert mutants.first_failure(output) == "tests/test_a.py::test_b[x - y]"
    assert mutants.first_failure("ERROR tests/test_a.py - ImportError\n") == "tests/test_a.py"
    assert mutants.first_failure("3 passed in 0.1s\n") is None


def test_a_sample_is_reproducible_and_only_takes_known_names():
    first = mutants.select(MUTANTS, None, 5, seed=3)
    assert first == mutants.select(MUTANTS, None, 5, seed=3) and len(first) == 5
    assert first != mutants.select(MUTANTS, None, 5, seed=4)
    assert mutants.select(MUTANTS, [MUTANTS[1].name], None, 0) == [MUTANTS[1]]
    with pytest.raises(SystemExit, match="no mutant named missing"):
        mutants.select(MUTANTS, ["missing"], None, 0)


# ----------------------------------------------------------------------------- the runner

CALC = """\
def add(a, b):
    return a + b


def halve(a):
    return a / 2


def untested():
    return 1
"""
TESTS = """\
from hypothesis import given, strategies as st

from calc import add, halve


def test_add():
    assert add(2, 3) == 5


@given(st.integers(1, 100))
def test_halve(n):
    assert halve(n) * 2 == n
"""


@pytest.fixture
def synthetic_repository(tmp_path) -> Path:
    """A git repository with one module, its tests (one fixed, one drawn by Hypothesis),
    and an ignored file."""
    root = tmp_path / "repository"
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / ".gitignore").write_text("ignored.txt\n")
    (root / "ignored.txt").write_text("not part of the tree\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def test_the_tree_is_the_files_git_would_commit(synthetic_repository):
    files = mutants.tree_files(synthetic_repository)
    assert sorted(files) == [".gitignore", "calc.py", "tests/test_calc.py"]


def test_the_runner_reports_caught_surviving_and_broken_mutants(synthetic_repository,
                                                                capsys):
    """A failure of the fixed test is the same at any seed: one run. A drawn test's
    failure must recur at every seed. A mutant of untested code survives. Original text
    that is not in the file exactly once is an error."""
    table = [
        Mutant("add_subtracts", "calc.py", "return a + b", "return a - b",
               ("tests/test_calc.py",)),
        Mutant("halve_doubles", "calc.py", "return a / 2", "return a * 2",
               ("tests/test_calc.py",)),
        Mutant("untested_changed", "calc.py", "return 1", "return 2",
               ("tests/test_calc.py",)),
        Mutant("text_gone", "calc.py", "return a % b", "return a // b",
               ("tests/test_calc.py",)),
        Mutant("text_twice", "calc.py", "return a ", "return b ", ("tests/test_calc.py",)),
    ]
    status = mutants.main(["--seeds", "0", "1", "--jobs", "2"], synthetic_repository, table)
    rows = {cells[0]: cells for cells in (
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in capsys.readouterr().out.splitlines() if line.startswith("| "))}
    assert status == 1
    assert rows["add_subtracts"][2:4] == ["tests/test_calc.py::test_add", "0"]
    assert rows["halve_doubles"][2:4] == ["tests/test_calc.py::test_halve", "0 1"]
    assert rows["untested_changed"][2:4] == ["SURVIVED: seed 0 passed", "0"]
    assert rows["text_gone"][2].startswith("ERROR: text_gone: its original text occurs 0")
    assert rows["text_twice"][2].startswith("ERROR: text_twice: its original text occurs 2")
    assert (synthetic_repository / "calc.py").read_text() == CALC  # planted in the copy
