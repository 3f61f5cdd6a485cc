"""JSON from an untrusted file: nesting depth checked before parsing, duplicate keys and
(where the format forbids them) NaN and Infinity refused, every failure a ValueError."""
from __future__ import annotations

import json
import re

# a JSON string literal, escapes included: its brackets are text, not structure
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def loads_checked(text: str, *, max_depth: int, allow_nan: bool, what: str):
    """json.loads(text), or ValueError starting with `what` when the text is not JSON,
    nests deeper than `max_depth` arrays and objects, repeats a key of one object, or
    (unless allow_nan) holds NaN or Infinity. The depth is measured on the text first,
    so a 100,000-deep list costs one linear scan and never recursion."""
    depth = 0
    for bracket in _BRACKET.finditer(_STRING.sub("", text)):
        if bracket.group() in "[{":
            depth += 1
            if depth > max_depth:
                raise ValueError(f"{what} nests deeper than {max_depth} levels")
        else:
            depth -= 1
    try:
        return json.loads(text, object_pairs_hook=_object_without_duplicates,
                          parse_constant=None if allow_nan else _refuse_constant)
    except ValueError as exc:  # json.JSONDecodeError and the hooks' errors
        raise ValueError(f"{what} is not valid JSON: {exc}") from None


def _object_without_duplicates(pairs: list) -> dict:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"key {repeated!r} appears twice in one object")
    return result


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")
