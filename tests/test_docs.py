"""The README and docs/ stay true to the code (examples that rot are defects).

- Every Python block of README.md and docs/*.md runs as written, each alone in a fresh
  namespace and an empty folder; a block that needs an optional extra skips, with the
  reason, where the extra is not installed. The walkthrough's blocks build on each other
  and print what the page shows: tests/test_walkthrough.py runs those.
- Every relative link and image points to a file that exists, and every anchor to a
  heading of the page it names.
- The README stays a front door: at most 260 lines, a link to every page of docs/, the
  walkthrough on its first screen, and line counts there that are the code's own.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from markdown_pages import parse_blocks, without_blocks

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
BLOCKS_RUN_ELSEWHERE = {"walkthrough.md"}  # tests/test_walkthrough.py runs them in order
README_MAX_LINES = 260
# "about N lines" in the README is a rounded count: it may be off by this fraction
LINE_COUNT_SLACK = 0.10

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`[^`\n]*`")

# a call an example makes -> (the module it needs, the extra that installs it)
NEEDS = {
    'init_process_group("mpi")': ("mpi4py", ".[distributed]"),
}


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def python_blocks(page: Path) -> list[str]:
    return [block.body for block in parse_blocks(page.read_text()) if block.info == "python"]


def prose_of(text: str) -> str:
    """The page without its fenced blocks and inline code, where `#` and `[..](..)` are
    not markdown."""
    return INLINE_CODE.sub("", without_blocks(text))


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as
    hyphens, and -1, -2, ... after a repeated one."""
    anchors: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", without_blocks(text), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchor, repeat = slug, 0
        while anchor in anchors:
            repeat += 1
            anchor = f"{slug}-{repeat}"
        anchors.add(anchor)
    return anchors


EXAMPLES = [(page, index) for page in PAGES if page.name not in BLOCKS_RUN_ELSEWHERE
            for index in range(len(python_blocks(page)))]
LINKS = [(page, target) for page in PAGES
         for target in sorted(set(LINK.findall(prose_of(page.read_text()))))]


def test_the_readme_and_the_api_page_have_python_examples():
    runnable = {page.name for page, _ in EXAMPLES}
    assert {"README.md", "api.md"} <= runnable


def _skip_without_its_extra(code: str, where: str) -> None:
    for call, (module, extra) in NEEDS.items():
        if call in code and importlib.util.find_spec(module) is None:
            pytest.skip(f"{where} calls {call}, which needs {module}: "
                        f'pip install -e "{extra}"')


@pytest.mark.parametrize(("page", "index"), EXAMPLES,
                         ids=[f"{page.name}-{index}" for page, index in EXAMPLES])
def test_python_example_runs(page, index, tmp_path, monkeypatch):
    code = python_blocks(page)[index]
    where = f"{_name(page)} python block {index}"
    _skip_without_its_extra(code, where)
    monkeypatch.chdir(tmp_path)
    code = code.replace("/tmp/demo.safetensors", str(tmp_path / "demo.safetensors"))
    exec(compile(code, where, "exec"), {})


def test_an_example_that_needs_a_missing_extra_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match=r"block 7 .*mpi4py.*\.\[distributed\]"):
        _skip_without_its_extra('dist.init_process_group("mpi")\n', "docs/x.md python block 7")
    _skip_without_its_extra("import minigrad as mg\n", "docs/x.md python block 7")  # runs


@pytest.mark.parametrize(("page", "target"), LINKS,
                         ids=[f"{page.name}:{target}" for page, target in LINKS])
def test_links_and_images_point_to_existing_files_and_headings(page, target):
    if re.match(r"[a-z]+:", target):  # https:, mailto: ...: not checked offline
        return
    path, _, anchor = target.partition("#")
    linked = (page.parent / path).resolve() if path else page
    assert linked.exists(), f"{_name(page)} links to {target}, which is missing"
    if anchor:
        assert anchor in heading_anchors(linked.read_text()), (
            f"{_name(page)} links to {target}: {linked.name} has no heading with that anchor")


def test_heading_anchors_are_githubs():
    text = "# The API\n## `benchmarks/gpu_check.sh`\n```python\n# not a heading\n```\n## The API\n"
    assert heading_anchors(text) == {"the-api", "benchmarksgpu_checksh", "the-api-1"}


def test_the_readme_fits_a_front_door():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines, at most {README_MAX_LINES}: move the detail into docs/")


def test_the_readme_links_every_page_of_docs():
    readme = README.read_text()
    unlinked = [_name(page) for page in DOCS if f"]({_name(page)})" not in readme]
    assert not unlinked, f"README.md does not link {unlinked}: add a line each to its list"


def _lines_of(paths: list[Path]) -> int:
    return sum(len(path.read_text().splitlines()) for path in paths)


def test_the_first_screen_links_the_walk_and_counts_the_core_and_the_package():
    first_screen = README.read_text().split("\n## ", 1)[0]  # everything before a section
    assert "(docs/walkthrough.md)" in first_screen
    package = ROOT / "minigrad"
    core = [package / "tensor_base.py", package / "tensor.py",
            *sorted((package / "autograd").glob("*.py"))]
    actual = {"core": _lines_of(core), "package": _lines_of(sorted(package.rglob("*.py")))}
    claims = re.findall(r"about\s+([\d,]+)\s+lines", first_screen)
    assert len(claims) == 2, f"the first screen should give two sizes, the core's and the " \
                             f"package's, as 'about N lines'; it gives {claims}"
    for (part, lines), claim in zip(actual.items(), claims):
        said = int(claim.replace(",", ""))
        assert abs(said - lines) <= LINE_COUNT_SLACK * lines, (
            f"README.md says the {part} is about {claim} lines; it has {lines}")
