"""docs/walkthrough.md stays true to the code it walks through.

- A citation `path:name` (name possibly dotted, `Class.method`) must name a function,
  class, method or constant written in that file and importable from it: renaming or
  moving a cited helper breaks this test instead of silently leaving the doc behind. A
  short mention (`_helper`, `Class.member`, `ClassName`) must be written in one of the
  files the doc cites, and a backticked repository path must exist.
- The ```python blocks run in order, in one namespace, in a temporary folder; a ```text
  block right after one is what that block must print.
- A block fenced ```python path:name is a quote of that source and must match it.
- The walk fits a 45-minute read, and its table of the core's files gives their line
  counts. (tests/test_docs.py checks its links, and the README's link to it.)
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import difflib
import functools
import importlib
import inspect
import io
import re
import textwrap
import traceback
from pathlib import Path

import pytest
from markdown_pages import Block, parse_blocks, without_blocks

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "walkthrough.md"
DOC_NAME = "docs/walkthrough.md"

CODE_SPAN = re.compile(r"`([^`\n]+)`")
CITATION = re.compile(r"^([\w./-]+\.py):([A-Za-z_]\w*(?:\.\w+)*)$")
REPOSITORY_PATH = re.compile(r"^[\w.-]+/[\w./-]*$")
# a private helper, a class member or a class name: things a reader looks up in the code
SHORT_MENTION = re.compile(r"^(?:_\w+|[A-Z]\w*\.\w+|[A-Z][a-z]\w*)$")

# Reading speeds for the time budget: prose read with the code open beside it, and the
# doc's code blocks read (not typed).
PROSE_WORDS_PER_MINUTE = 150
CODE_LINES_PER_MINUTE = 20
READING_MINUTES = 45


TEXT = DOC.read_text()
BLOCKS = parse_blocks(TEXT)
PROSE = without_blocks(TEXT)
SPANS = CODE_SPAN.findall(PROSE)
CITATIONS = sorted({span for span in SPANS if CITATION.match(span)}
                   | {b.info.split(maxsplit=1)[1] for b in BLOCKS if " " in b.info})
CITED_FILES = sorted({c.split(":")[0] for c in CITATIONS})


def runnable_blocks(text: str, blocks: list[Block]) -> list[tuple[Block, str | None]]:
    """Each ```python block with the output it must print (its ```text block, if one
    follows it directly). A ```text block anywhere else, or a fence of another kind, is an
    error: every block of the doc is either run, compared or quoted."""
    runnable: list[tuple[Block, str | None]] = []
    previous: Block | None = None
    for block in blocks:
        if block.info == "python":
            runnable.append((block, None))
        elif block.info == "text":
            follows_code = (previous is not None and previous.info == "python"
                            and not text[previous.end:block.start].strip())
            if not follows_code:
                raise ValueError(f"{DOC_NAME}:{block.line}: a text block must follow a python "
                                 "block directly (it shows that block's output)")
            runnable[-1] = (runnable[-1][0], block.body)
        elif not (block.info.startswith("python ") and CITATION.match(block.info.split()[1])):
            raise ValueError(f"{DOC_NAME}:{block.line}: unknown block kind {block.info!r} "
                             "(expected python, text or 'python path.py:name')")
        previous = block
    return runnable


# ----------------------------------------------------------------------------- citations


def module_name(path: str) -> str:
    name = path.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def resolve(path: str, name: str):
    """The object `name` (dotted) of the module at `path`."""
    found = importlib.import_module(module_name(path))
    for part in name.split("."):
        found = getattr(found, part)
    return found


@functools.cache
def module_body(path: str) -> list[ast.stmt]:
    return ast.parse((ROOT / path).read_text()).body


def _assigned_names(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)]
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    return []


def written_in(body: list[ast.stmt], parts: list[str]) -> bool:
    """True when the statements define parts[0] (a def, a class or an assignment), and,
    for a dotted name, parts[0] is a class whose body defines the rest."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if statement.name != parts[0]:
                continue
            if len(parts) == 1:
                return True
            if isinstance(statement, ast.ClassDef) and written_in(statement.body, parts[1:]):
                return True
        elif len(parts) == 1 and parts[0] in _assigned_names(statement):
            return True
    return False


def citation_problem(citation: str) -> str | None:
    """None when the citation `path:name` holds; else what is wrong with it."""
    path, name = CITATION.match(citation).groups()
    if not (ROOT / path).is_file():
        return f"{citation}: {path} does not exist"
    if not written_in(module_body(path), name.split(".")):
        return (f"{citation}: {path} does not define {name} (renamed or moved? update "
                f"{DOC_NAME})")
    try:
        resolve(path, name)
    except (ImportError, AttributeError) as exc:
        return f"{citation}: cannot be imported: {type(exc).__name__}: {exc}"
    return None


def written_in_cited_files(name: str) -> bool:
    """True when one of the files the doc cites defines `name`: at module level, or as a
    member of a class (`_link` is Function._link), or `Class.member` exactly."""
    parts = name.split(".")
    for path in CITED_FILES:
        body = module_body(path)
        if written_in(body, parts):
            return True
        if len(parts) == 1 and any(isinstance(s, ast.ClassDef) and written_in(s.body, parts)
                                   for s in body):
            return True
    return False


def test_the_doc_cites_code():
    assert len(CITATIONS) >= 20
    assert "minigrad/autograd/engine.py:run_backward" in CITATIONS


@pytest.mark.parametrize("citation", CITATIONS)
def test_cited_code_exists(citation):
    problem = citation_problem(citation)
    assert problem is None, problem


def test_a_renamed_or_moved_helper_fails_its_citation():
    assert citation_problem("minigrad/autograd/engine.py:run_backward") is None
    assert "does not define" in citation_problem("minigrad/autograd/engine.py:run_backwards")
    assert "does not exist" in citation_problem("minigrad/autograd/engines.py:run_backward")
    # requires_grad_ is reachable from Tensor, but written in tensor_base.py
    assert "does not define" in citation_problem("minigrad/tensor.py:Tensor.requires_grad_")
    assert citation_problem("minigrad/tensor_base.py:TensorBase.requires_grad_") is None


SHORT_MENTIONS = sorted({s for s in SPANS if SHORT_MENTION.match(s)
                         and not hasattr(builtins, s)})


@pytest.mark.parametrize("name", SHORT_MENTIONS)
def test_short_mentions_name_code_in_the_cited_files(name):
    assert written_in_cited_files(name), (
        f"{DOC_NAME} mentions `{name}`, which none of the files it cites defines "
        "(renamed or moved?)"
    )


@pytest.mark.parametrize("path", sorted({s for s in SPANS if REPOSITORY_PATH.match(s)}))
def test_mentioned_paths_exist(path):
    assert (ROOT / path).exists(), f"{DOC_NAME} mentions {path}, which does not exist"


# ----------------------------------------------------------------------------- code blocks


def test_every_block_is_run_compared_or_quoted():
    runnable = runnable_blocks(TEXT, BLOCKS)
    assert len(runnable) >= 10
    assert sum(expected is not None for _, expected in runnable) >= 5


def test_python_blocks_run_in_order_and_print_what_is_shown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing a block writes lands in the repository
    namespace = {"__name__": "walkthrough"}
    for number, (block, expected) in enumerate(runnable_blocks(TEXT, BLOCKS), start=1):
        # padded with newlines so that tracebacks give the doc's own line numbers
        code = compile("\n" * block.line + block.body, DOC_NAME, "exec")
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(code, namespace)
        except Exception:
            pytest.fail(f"python block {number} ({DOC_NAME}:{block.line}) raised:\n"
                        f"{traceback.format_exc()}")
        if expected is not None and printed.getvalue().rstrip() != expected.rstrip():
            diff = "\n".join(difflib.unified_diff(
                expected.rstrip().splitlines(), printed.getvalue().rstrip().splitlines(),
                "shown in the doc", "printed", lineterm=""))
            pytest.fail(f"python block {number} ({DOC_NAME}:{block.line}) printed something "
                        f"else than the text block under it shows:\n{diff}")


QUOTES = [b for b in BLOCKS if b.info.startswith("python ")]


@pytest.mark.parametrize("block", QUOTES, ids=[b.info.split()[1] for b in QUOTES])
def test_quoted_source_matches_the_code(block):
    path, name = CITATION.match(block.info.split()[1]).groups()
    source = textwrap.dedent(inspect.getsource(resolve(path, name)))
    if block.body != source:
        diff = "\n".join(difflib.unified_diff(source.splitlines(), block.body.splitlines(),
                                              f"{path}:{name}", DOC_NAME, lineterm=""))
        pytest.fail(f"the quote at {DOC_NAME}:{block.line} no longer matches the code:\n{diff}")


def test_block_checks_catch_stray_and_unknown_blocks():
    stray_output = "text\n\n```text\n1\n```\n"
    with pytest.raises(ValueError, match="must follow a python block"):
        runnable_blocks(stray_output, parse_blocks(stray_output))
    unknown = "```bash\nls\n```\n"
    with pytest.raises(ValueError, match="unknown block kind"):
        runnable_blocks(unknown, parse_blocks(unknown))
    shown = "```python\nprint(1)\n```\n\n```text\n1\n```\n"
    [(block, expected)] = runnable_blocks(shown, parse_blocks(shown))
    assert (block.body, expected) == ("print(1)\n", "1\n")


# ----------------------------------------------------------------------------- links
# (tests/test_docs.py checks every link and image of docs/, this page's included, and that
# the README links here on its first screen)


def test_the_walk_shows_its_graph_picture():
    assert "](walkthrough_graph.png)" in PROSE


# ----------------------------------------------------------------------------- reading time


def test_the_walk_reads_in_under_45_minutes():
    prose_words = len(PROSE.split())
    code_lines = sum(b.body.count("\n") for b in BLOCKS)
    minutes = prose_words / PROSE_WORDS_PER_MINUTE + code_lines / CODE_LINES_PER_MINUTE
    assert minutes <= READING_MINUTES, (
        f"{DOC_NAME}: {prose_words} words of prose and {code_lines} lines of code take about "
        f"{minutes:.0f} minutes to read; the walk is meant to take at most {READING_MINUTES}"
    )


LINE_COUNT_ROW = re.compile(r"^\| `([\w./-]+\.py)` \| (\d+) \|", re.MULTILINE)


def test_the_line_counts_of_the_core_are_the_files_own():
    rows = LINE_COUNT_ROW.findall(TEXT)
    assert len(rows) >= 8
    wrong = [f"{path}: the doc says {count} lines, the file has {lines}"
             for path, count in rows
             if (lines := len((ROOT / path).read_text().splitlines())) != int(count)]
    assert wrong == [], "; ".join(wrong)
