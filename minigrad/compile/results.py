"""What a compiled function returns, beyond tuples, lists and dicts.

A plan's output template (plan.py) holds tensors in tuples, lists and dicts. A step may
return them in a namedtuple (`x.max(dim=1)`, a model's `Output(logits, loss)`) or a
dataclass: the capture records the plain structure (`plain_result`: a namedtuple as a
tuple, a dataclass as a dict of its fields) with the classes aside, and every replay
builds the step's own kind of result again from it (`rebuilt`). Any other object holding
a tensor stops the capture: its tensors would be the capture's, not each call's.
"""
from __future__ import annotations

import dataclasses

from minigrad.tensor import Tensor


class Unreplayable(Exception):
    """A result object holding tensors that a replay could not build again."""


def plain_result(value) -> tuple:
    """(the value with namedtuples as tuples and dataclasses as dicts, what `rebuilt`
    needs to undo it: None where there is nothing to undo)."""
    kind = type(value)
    if kind in (tuple, list) or _is_namedtuple(value):
        pairs = [plain_result(v) for v in value]
        plain = tuple(p for p, _ in pairs) if kind is not list else [p for p, _ in pairs]
        shapes = [s for _, s in pairs]
        if kind in (tuple, list) and not any(shapes):
            return plain, None
        return plain, (kind, shapes)
    if kind is dict or _is_dataclass(value):
        if kind is dict:
            items = value.items()
        elif all(f.init for f in dataclasses.fields(value)):
            items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
        else:
            raise Unreplayable(f"a {kind.__name__} (a dataclass with fields its __init__ "
                               "does not take)")
        pairs = {k: plain_result(v) for k, v in items}
        plain = {k: p for k, (p, _) in pairs.items()}
        shapes = {k: s for k, (_, s) in pairs.items()}
        if kind is dict and not any(shapes.values()):
            return plain, None
        return plain, (kind, shapes)
    if not isinstance(value, Tensor) and any(isinstance(v, Tensor)
                                             for v in getattr(value, "__dict__", {}).values()):
        raise Unreplayable(f"a {kind.__name__} holding tensors (a replay returns tensors "
                           "in tuples, lists, dicts, namedtuples and dataclasses)")
    return value, None


def rebuilt(plain, shape):
    """The result `plain_result` made `plain` of, from a replay's values."""
    if shape is None:
        return plain
    kind, shapes = shape
    if isinstance(shapes, dict):
        fields = {k: rebuilt(v, shapes[k]) for k, v in plain.items()}
        return fields if kind is dict else kind(**fields)
    items = [rebuilt(v, s) for v, s in zip(plain, shapes, strict=True)]
    return kind(*items) if _is_namedtuple_class(kind) else kind(items)


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and _is_namedtuple_class(type(value))


def _is_namedtuple_class(kind) -> bool:
    return issubclass(kind, tuple) and hasattr(kind, "_fields")


def _is_dataclass(value) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)
