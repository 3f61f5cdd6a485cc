"""The README's Python examples run as written (examples that rot are defects)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_python_examples():
    assert PYTHON_BLOCKS


@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_readme_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = PYTHON_BLOCKS[index].replace("/tmp/demo.safetensors", str(tmp_path / "demo.st"))
    exec(compile(code, f"README.md python block {index}", "exec"), {})
