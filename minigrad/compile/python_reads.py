"""The Python values a step's own code reads, so that a plan is replayed only while they
are what the capture saw.

A plan bakes in the numbers the eager run computed with: in `x * scale`, `scale` is a
constant of the recorded multiply. When `scale` is a global, or an attribute that the
code reads through a chain (`self.cfg.scale`, `config.train.dropout`), a later change to
it must not replay the old number. While the step runs to be captured, `PythonReads`
watches which functions of the user's code run (`sys.setprofile`: a call event per
Python function; the code of minigrad, of the standard library and of installed packages
is skipped, and so is a module's top level, run once at its import, and code run inside
a recorded call, which a replay runs again: an autograd Function's forward, an
optimizer's step) and reads, in each one's bytecode, the chains it loads:

    LOAD_GLOBAL scale                      -> the global `scale`
    LOAD_FAST self; LOAD_ATTR cfg; LOAD_ATTR scale
                                           -> self.cfg.scale, from the call's `self`
    LOAD_GLOBAL config; LOAD_ATTR dropout  -> config.dropout

Each chain whose end is a plain value (a number, a string, None) or a list, tuple or
dict of them (values.py) becomes a `Read`: where its first link lives (the function's
globals, or the object an argument held), the names along it, and what each link was
when the function was entered: the objects in between by identity, the end by value.
Links are followed only through an object's own `__dict__` (an instance's attributes, a
Python module's globals, a class's attributes), never through a property, which would
run code. guards.py checks the reads before every replay, as it checks a module's
attributes; a read that changed looks for, or captures, another plan.

A step that changes a value it reads (a global counter it increments) would never find
its plan again: after the capture, a read that no longer `holds()` is put back as it was
(`put_back`, as the rollback puts back a module's attributes) and the step runs eagerly
(capture.py). Not seen: values read through a closure's cells, by `getattr` with a computed
name, or inside minigrad (its modules' attributes are checked by guards.py).
"""
from __future__ import annotations

import dis
import os
import site
import sys
import sysconfig
import types
import weakref

import numpy as np

from minigrad.compile.traced import ACTIVE
from minigrad.compile.values import PLAIN, recalled, remember, same
from minigrad.tensor import Tensor

_MISSING = object()
_ROOTS = ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME")


def _library_folders() -> tuple[str, ...]:
    """Folders of code whose reads are not the user's: minigrad's, the standard
    library's and installed packages' (NumPy, Numba and what they import)."""
    paths = sysconfig.get_paths()
    folders = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
               os.path.dirname(os.path.abspath(np.__file__)),
               paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"],
               *site.getsitepackages(), site.getusersitepackages()]
    return tuple(os.path.join(os.path.abspath(folder), "") for folder in folders)


class Read:
    """One chain of loads and what each link was: `holder` is the function's globals (a
    dict, `from_globals`) or the object an argument held; `names` the names along the
    chain; `links[i]` the value after names[i] (remembered, values.py)."""

    __slots__ = ("holder", "from_globals", "names", "links", "text")

    def __init__(self, holder, from_globals: bool, names: tuple, links: tuple, text: str):
        self.holder = holder
        self.from_globals = from_globals
        self.names = names
        self.links = links
        self.text = text  # the chain as the code wrote it: "self.cfg.scale"

    def holds(self) -> bool:
        """Whether every link is still what it was."""
        return self._first_change() is None

    def put_back(self) -> None:
        """Set the first link that changed back to what it was (a list or dict in place,
        values.py), which puts back the rest of the chain."""
        change = self._first_change()
        if change is None:
            return
        owner, attributes, name, link = change
        value = recalled(link)
        if isinstance(attributes, dict):
            attributes[name] = value
        else:  # a class's attributes (a read-only mapping)
            setattr(owner, name, value)

    def _first_change(self):
        """(owner, its attributes, name, remembered link) of the first link that is no
        longer what it was, or None."""
        owner = self.holder
        for index, (name, link) in enumerate(zip(self.names, self.links, strict=True)):
            attributes = owner if index == 0 and self.from_globals else vars(owner)
            value = attributes.get(name, _MISSING)
            if not same(value, link):
                return owner, attributes, name, link
            owner = value
        return None


class PythonReads:
    """A context manager recording the reads of the user's code that runs inside it
    (module docstring); `reads` after it, each chain once."""

    def __init__(self):
        self.reads: list[Read] = []
        self._seen: set = set()
        self._user_code: dict = {}  # code object -> whether it is the user's
        self._folders = _library_folders()
        self._previous = None

    def __enter__(self) -> PythonReads:
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(self._previous)

    def _profile(self, frame, event, _arg) -> None:
        if event != "call" or ACTIVE.recorder is None or ACTIVE.recorder.depth:
            return  # (inside a recorded call: a replay runs that code again, live)
        code = frame.f_code
        user = self._user_code.get(code)
        if user is None:
            name = code.co_filename
            # (a module's own code runs once, when it is imported: it defines its globals)
            user = (not name.startswith(self._folders) and not name.startswith("<frozen")
                    and code.co_name != "<module>")
            self._user_code[code] = user
        if user:
            self._record(frame, code)

    def _record(self, frame, code) -> None:
        arguments = None
        for kind, root, names in chains_of(code):
            if kind == "global":
                if root in frame.f_globals:  # (else a builtin)
                    self._add(frame.f_globals, True, (root, *names), "")
                continue
            if arguments is None:
                arguments = frame.f_locals
            holder = arguments.get(root, _MISSING)
            if holder is not _MISSING and _followable(holder):
                self._add(holder, False, names, f"{root}.")

    def _add(self, holder, from_globals: bool, names: tuple, prefix: str) -> None:
        key = (id(holder), names)
        if key in self._seen:
            return
        self._seen.add(key)
        links = []
        owner = holder
        for index, name in enumerate(names):
            value = (owner.get(name, _MISSING) if index == 0 and from_globals
                     else _own(owner, name))
            if value is _MISSING:
                return  # a property, a method, a slot: not followed
            links.append(remember(value))
            if _is_plain(value):
                chain = names[:index + 1]
                self.reads.append(Read(holder, from_globals, chain, tuple(links),
                                       prefix + ".".join(chain)))
                return
            if not _followable(value):
                return
            owner = value


def chains_of(code) -> list[tuple]:
    """(kind, root name, attribute names) for each chain of loads in `code`'s bytecode:
    kind "global" for LOAD_GLOBAL, "local" for an argument or a local; a method load
    ends a chain before the method."""
    chains = _CHAINS.get(code)
    if chains is None:
        chains = []
        current = None
        for instruction in dis.get_instructions(code):
            name = instruction.opname
            if name in _ROOTS:
                if current is not None:
                    chains.append(current)
                kind = "global" if name in ("LOAD_GLOBAL", "LOAD_NAME") else "local"
                current = (kind, instruction.argval, ())
                continue
            if (name == "LOAD_ATTR" and current is not None
                    and not _loads_method(instruction)):
                current = (current[0], current[1], (*current[2], instruction.argval))
                continue
            if current is not None:
                chains.append(current)
            current = None
        if current is not None:
            chains.append(current)
        chains = [c for c in dict.fromkeys(chains) if c[0] == "global" or c[2]]
        _CHAINS[code] = chains
    return chains


_CHAINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # code -> its chains


def _loads_method(instruction) -> bool:
    """A LOAD_ATTR that loads a method for a call (Python 3.12 flags it in its arg)."""
    return sys.version_info >= (3, 12) and bool(instruction.arg & 1)


def _own(owner, name: str):
    """owner.name where it is plain data in the owner's own __dict__ (an instance's, a
    module's or a class's), else _MISSING."""
    attributes = getattr(owner, "__dict__", None)
    if attributes is None:
        return _MISSING
    value = attributes.get(name, _MISSING)
    if isinstance(owner, type) and hasattr(type(value), "__get__"):
        return _MISSING  # a method or property of a class
    return value


def _is_plain(value) -> bool:
    """A value compared by value: a number, a string, None, or a list, tuple or dict
    holding only such values."""
    if type(value) in PLAIN:
        return True
    if type(value) in (list, tuple):
        return all(_is_plain(v) for v in value)
    if type(value) is dict:
        return all(_is_plain(v) for v in value.values())
    return False


def _followable(value) -> bool:
    """An object whose own attributes a chain may go on into: not a tensor, an array or
    a function (their attributes are not the step's settings)."""
    return not isinstance(value, (Tensor, np.ndarray, types.FunctionType,
                                  types.BuiltinFunctionType, types.MethodType))
