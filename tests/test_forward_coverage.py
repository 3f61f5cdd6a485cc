"""Every op of minigrad.ops and every function of minigrad.nn.functional has its forward
values checked against NumPy in a tests/test_forward_*.py file: a new op without one
fails here, by name."""
from __future__ import annotations

import re
from pathlib import Path

import minigrad.nn.functional as F
import minigrad.ops as ops

FORWARD_TESTS = sorted(Path(__file__).parent.glob("test_forward_*.py"))

# reached through the Tensor's in-place methods (x.add_(...)) rather than by name
SYNTAX = {"inplace": r"\.add_\("}


def _used(name: str, source: str) -> bool:
    """Reached as ops.name or F.name, or named in a case table as "name" (a bare .name(
    would also match NumPy's methods of the same name in the formulas)."""
    pattern = SYNTAX.get(name, rf"(\b(ops|F)\.{name}\b|\"{name}\")")
    return re.search(pattern, source) is not None


def test_every_op_and_functional_has_a_forward_value_test():
    source = "\n".join(path.read_text() for path in FORWARD_TESTS
                       if path.name != Path(__file__).name)
    names = {n for n in ops.__all__ if callable(getattr(ops, n))} | set(ops.TENSOR_METHODS)
    missing_ops = sorted(n for n in names if not _used(n, source))
    missing_functional = sorted(n for n in F.__all__ if not _used(n, source))
    assert not missing_ops, f"ops without a forward-value test: {missing_ops}"
    assert not missing_functional, f"F functions without a forward-value test: " \
                                   f"{missing_functional}"
