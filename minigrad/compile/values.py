"""How a capture remembers the Python values a step reads (a module's attributes, those of
an object passed as an argument), how a guard compares them later, and how a rollback
puts them back.

Numbers, strings and None compare by value. Lists, tuples and dicts (their subclasses
too: an OrderedDict, a defaultdict, a namedtuple) compare item by item, so they are
remembered with their items (`Remembered`): a list changed in place
(`self.scales[0] = 7.0`, `self.cache.append(x)`) is a change, and one a rollback undoes
in place. Anything else (a tensor, a function, a module) compares by identity.
"""
from __future__ import annotations

# compared by value; also what a call key holds by value (guards.py)
PLAIN = (bool, int, float, complex, str, bytes, type(None))
MISSING = object()  # what a lookup gives for an absent attribute (compared by identity)
CONTAINERS = (list, tuple, dict)  # compared item by item, subclasses included


class Remembered:
    """A list, tuple or dict and, remembered the same way, the items it held."""

    __slots__ = ("container", "items")

    def __init__(self, container):
        self.container = container
        pairs = container.items() if isinstance(container, dict) else enumerate(container)
        self.items = {k: remember(v) for k, v in pairs}


def remember(value):
    """What `same` and `put_back` need of a value: a Remembered for a list, tuple or
    dict, the value itself otherwise."""
    return Remembered(value) if isinstance(value, CONTAINERS) else value


def same(value, remembered) -> bool:
    """Whether `value` is still what `remember` saw."""
    if isinstance(remembered, Remembered):
        if value is not remembered.container:
            return False
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        current = dict(pairs)
        return current.keys() == remembered.items.keys() and all(
            same(current[k], item) for k, item in remembered.items.items())
    if type(value) is not type(remembered):
        return False
    if type(value) in PLAIN:
        return value == remembered or (value != value and remembered != remembered)  # NaN
    return value is remembered


def recalled(remembered):
    """The value `remember` saw, with its lists and dicts as they were then (in place)."""
    if not isinstance(remembered, Remembered):
        return remembered
    container = remembered.container
    items = {k: recalled(item) for k, item in remembered.items.items()}
    if isinstance(container, dict):
        container.clear()
        container.update(items)
    elif isinstance(container, list):
        container[:] = list(items.values())
    return container
