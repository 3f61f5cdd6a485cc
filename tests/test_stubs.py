"""The type stubs list what the table of ops binds at run time, so editors, type checkers
and help() find every Tensor method and mg.<op> function."""
import ast
import pydoc
import subprocess
import sys
from pathlib import Path

import minigrad as mg
from minigrad import ops

REPO = Path(__file__).resolve().parent.parent


def test_the_stubs_are_up_to_date():
    result = subprocess.run([sys.executable, "-m", "tools.generate_stubs", "--check"],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def _defined_names(path: Path, in_class: str | None) -> set:
    tree = ast.parse(path.read_text())
    body = tree.body
    if in_class is not None:
        body = next(node for node in body
                    if isinstance(node, ast.ClassDef) and node.name == in_class).body
    return {node.name for node in body if isinstance(node, ast.FunctionDef)}


def test_every_method_and_function_of_the_table_is_in_the_stubs():
    package = Path(mg.__file__).parent
    methods = _defined_names(package / "tensor.pyi", "Tensor")
    functions = _defined_names(package / "__init__.pyi", None)
    assert set(ops.TENSOR_METHODS) <= methods
    assert set(ops.FUNCTIONS) <= functions


def test_a_method_of_the_table_is_the_op_itself_with_its_signature_and_docstring():
    assert mg.Tensor.sum is ops.sum is mg.sum
    page = pydoc.render_doc(mg.Tensor.sum)
    assert "keepdim" in page and ops.sum.__doc__.splitlines()[0] in page


def test_every_op_of_the_table_has_a_docstring():
    assert [name for name, (function, _) in ops.OPS.items() if not function.__doc__] == []
