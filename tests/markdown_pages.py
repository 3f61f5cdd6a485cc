"""The fenced blocks of a Markdown page, as tests/test_docs.py (every page) and
tests/test_walkthrough.py (the walk, whose blocks are run, compared or quoted) read
them."""
from __future__ import annotations

import re
from dataclasses import dataclass

FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


@dataclass
class Block:
    info: str  # the fence's info string: "python", "text", "python path.py:name", ...
    body: str
    line: int  # the line of the opening fence in the page
    start: int
    end: int


def parse_blocks(text: str) -> list[Block]:
    return [
        Block(m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1,
              m.start(), m.end())
        for m in FENCE.finditer(text)
    ]


def without_blocks(text: str) -> str:
    """The page without its fenced blocks."""
    pieces, position = [], 0
    for block in parse_blocks(text):
        pieces.append(text[position:block.start])
        position = block.end
    pieces.append(text[position:])
    return "".join(pieces)
