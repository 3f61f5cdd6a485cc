"""The Python values a step's own code reads, so that a plan is replayed only while they
are what the capture saw.

A plan bakes in the numbers the eager run computed with: in `x * scale`, `scale` is a
constant of the recorded multiply. When `scale` is a global, or an attribute that the
code reads through a chain (`self.cfg.scale`, `config.train.dropout`), a later change to
it must not replay the old number. While the step runs to be captured, `PythonReads`
watches which functions of the user's code run (`sys.settrace`: a call event per
Python function, no line events; the code of minigrad, of the standard library and of
installed packages is skipped, and so is a module's top level, run once at its import)
and reads, in each one's bytecode, the chains it loads:

    LOAD_GLOBAL scale                      -> the global `scale`
    LOAD_FAST self; LOAD_ATTR cfg; LOAD_ATTR scale
                                           -> self.cfg.scale, from the call's `self`
    LOAD_GLOBAL config; LOAD_ATTR dropout  -> config.dropout

Each chain becomes a `Read`: one link per name, each a lookup in a `__dict__` (the
function's globals, an instance's attributes, a Python module's or a class's) and what it
gave when the function was entered: a number, a string, None, a NumPy scalar or a
list, tuple or dict of them by value (values.py; a container of more than MAX_ITEMS
items by identity), anything else by identity. An attribute that is not in the
instance's own `__dict__` is a link saying so, then, for a class attribute, a link into
the class that holds it; a property or a method ends the chain (no guard runs code), and
so does a library's module (`np.pi`, `F.relu`: the capture patches some of minigrad's
functions while it runs).
guards.py checks every link before every replay; a link that changed looks for, or
captures, another plan.

An attribute of a module is not a link: guards.py checks a module's attributes as the
step found them (a chain goes on through it, `self.cfg.scale`).

A step that changes a value it reads (a global counter it increments) would never find
its plan again: after the capture, the step runs eagerly (capture.py), its change first
put back (`put_back`, as the rollback puts back a module's attributes) where the change
happened inside the function that read the value: what that function found is then what
the step found (a function may also read what the step wrote before calling it, a
setting changed for a while, which is left as it is). Each function of the user's code
whose reads were recorded is told when it returns (a local trace function, its line
events off), to know which. Reads of an object the step made (a cursor it creates and
advances) are dropped: once the step is over, only the reads hold it. An autograd
Function's forward, which a replay runs again, is watched too, since a number it stores
can reach a recorded backward (`self.alpha = ALPHA`, for a gradient reversal): its reads
that end in a number are guarded, unless the step changes them, which the replay does
again. Other code inside a recorded call (an optimizer's or a scheduler's step) reads
its values live at each replay and is not watched. A tensor of the call's own arguments
is read from each call, not guarded.

A function of the step that calls print() prints while the step is captured and not
at a replay, which runs no Python: `prints` says where, for a warning (capture.py).

A signal handler or a finalizer (`__del__`) that runs amid the step is not the step's:
what it reads and changes (a stop flag) is left alone, as are the functions it calls.

A local set once from a chain stands for it (`cfg = self.cfg; cfg.scale`). Not seen: a
local set in two places or where branches meet, a loop variable or a subscript
(`blocks[0].scale`), a closure's own variables, `getattr()`, `type(self).SCALE`, an object
with `__slots__`, and code installed as a package; a chain in a branch the step did not
take is guarded all the same. Under another tracer (a debugger, coverage) no change is
put back. A value another thread changes while the step is captured is taken for the
step's change.
"""
from __future__ import annotations

import dis
import enum
import functools
import os
import signal
import site
import sys
import sysconfig
import types
import weakref
from collections import Counter

import numpy as np

from minigrad.compile.traced import ACTIVE
from minigrad.compile.values import CONTAINERS, MISSING, PLAIN, recalled, remember, same
from minigrad.nn.modules.module import Module
from minigrad.tensor import Tensor

_ROOTS = ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME")
MAX_ITEMS = 256  # a larger list, tuple or dict (a vocabulary) is checked by identity
MAX_LINKS = 10_000  # past this, a step reads too much Python to check at each call


@functools.cache
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
    """One chain of loads: `links`, each (the attributes looked in, their owner, the
    name, what it gave, remembered), and the chain as the code wrote it (`text`).
    `holder` is the chain's first object (None for a global); `live`: read by code a
    replay runs again; `changed_inside`: whether the function that read it (or one it
    called) changed it, so that what it gave is what the step found before it changed
    it (what a function reads may also be what the step wrote before calling it)."""

    __slots__ = ("holder", "links", "text", "live", "changed_inside")

    def __init__(self, holder, links: tuple, text: str, live: bool):
        self.holder = holder
        self.links = links
        self.text = text
        self.live = live
        self.changed_inside = False  # by the function that read it, as it returned

    def holds(self) -> bool:
        """Whether every link still gives what it gave."""
        return self._first_change() is None

    def put_back(self) -> None:
        """Set the first link that changed back to what it was (a list or dict in place,
        values.py), which puts back the rest of the chain."""
        change = self._first_change()
        if change is None:
            return
        attributes, owner, name, remembered = change
        value = recalled(remembered)
        if isinstance(attributes, dict):
            if value is MISSING:
                attributes.pop(name, None)
            else:
                attributes[name] = value
        elif value is MISSING:  # a class's attributes (a read-only mapping)
            delattr(owner, name)
        else:
            setattr(owner, name, value)

    def _first_change(self):
        for link in self.links:
            attributes, _, name, remembered = link
            if not same(attributes.get(name, MISSING), remembered):
                return link
        return None


class PythonReads:
    """A context manager recording the reads of the user's code that runs inside it
    (module docstring): `reads`, each chain once, and `overflow`, whether there were
    more than MAX_LINKS links."""

    def __init__(self):
        self.reads: list[Read] = []
        self.prints: list[str] = []  # where the step's code calls print(): "file:line"
        self.overflow = False
        self._links = 0
        self._seen: set = set()
        self._user_code: dict = {}  # code object -> whether it is the user's
        self._folders = _library_folders()
        self._previous = None
        # code that runs amid the step but is not the step's: what it reads and changes
        # (a signal handler setting a stop flag) is not the step's either
        self._asides = _signal_handler_code()
        self._interrupted = False

    def __enter__(self) -> PythonReads:
        self._previous = previous = sys.gettrace()
        if previous is None:
            sys.settrace(self._trace)
        else:  # a debugger's or coverage's tracer: it goes on tracing
            def trace(frame, event, arg):
                self._trace(frame, event, arg)
                return previous(frame, event, arg)

            sys.settrace(trace)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._previous)

    def drop_settled(self) -> None:
        """After the step: forget the reads of objects the step made (nothing but the
        reads holds them now) and the changes of code a replay runs again."""
        ours: dict[int, int] = {}  # id -> the references the reads hold
        for read in self.reads:
            for obj in (read.holder, *(o for link in read.links for o in link[1::2])):
                ours[id(obj)] = ours.get(id(obj), 0) + 1
        self.reads[:] = [read for read in self.reads
                         if not (read.live and not read.holds())
                         and not (read.holder is not None
                                  and sys.getrefcount(read.holder) - 1 <= ours[id(read.holder)])]

    def _trace(self, frame, _event, _arg):
        """The global trace function, called as each Python function starts ("call"):
        for a function whose reads it recorded, a local one told when it returns (no
        line of it is traced); else None."""
        if ACTIVE.recorder is None:
            return None
        code = frame.f_code
        user = self._user_code.get(code)
        if user is None:
            name = code.co_filename
            # (a module's own code runs once, when it is imported: it defines its globals)
            user = (not name.startswith(self._folders) and not name.startswith("<frozen")
                    and code.co_name != "<module>")
            self._user_code[code] = user
            if user and code.co_name == "__del__":
                self._asides.add(code)
        if not user or self._interrupted:
            return None
        if code in self._asides:  # a signal handler or a finalizer, run amid the step
            self._interrupted = True
            return self._resumed
        recorder = ACTIVE.recorder
        if recorder.depth and recorder.unit_arrays is None:
            return None  # code a replay runs again, storing nothing for a backward
        read = self._record(frame, code, live=recorder.depth > 0)
        if not read or self._previous is not None:
            return None
        frame.f_trace_lines = False

        def returned(_frame, event, _arg):
            if event == "return":
                for one in read:
                    one.changed_inside = not one.holds()
            return returned

        return returned

    def _resumed(self, _frame, event, _arg):
        """The local trace function of a signal handler or finalizer: the step's reads
        are watched again once it returns."""
        if event == "return":
            self._interrupted = False
        return self._resumed

    def _record(self, frame, code, live: bool) -> list:
        """The reads of the function `frame` just entered, as they are now (and where it
        calls print(), which a replay does not)."""
        line = print_line_of(code)
        if line is not None and not live and "print" not in frame.f_globals:
            self.prints.append(f"{code.co_filename}:{line}")
        read = []
        arguments = None
        for kind, root, names in chains_of(code):
            if kind == "global":
                if root in frame.f_globals:  # (else a builtin)
                    read.append(self._add(None, frame.f_globals, (root, *names), "", live))
                continue
            if arguments is None:
                arguments = frame.f_locals
            holder = arguments.get(root, MISSING)
            if holder is not MISSING and _followable(holder):
                read.append(self._add(holder, None, names, f"{root}.", live))
        return [one for one in read if one is not None]

    def _add(self, holder, global_names, names: tuple, prefix: str, live: bool):
        """The Read of one chain (None if it was read before, or gave nothing)."""
        key = (id(holder) if holder is not None else id(global_names), names)
        if key in self._seen or self.overflow:
            return None
        self._seen.add(key)
        links = []
        owner = value = holder
        index = 0
        for index, name in enumerate(names):
            if index == 0 and global_names is not None:
                value = global_names.get(name, MISSING)
                found = [(global_names, None, value)]
            else:
                found, value = _lookup(owner, name)
            if id(value) in ACTIVE.recorder.arguments:
                break  # a tensor of the call's arguments: read from each call
            links += [(attributes, where, name, _remember(v)) for attributes, where, v in found]
            if value is MISSING or not _followable(value):
                break
            owner = value
        if live and not _is_scalar(value):
            return None  # what code run again at each replay reads, but a number it keeps
        if not links:
            return None
        self._links += len(links)
        self.overflow = self._links > MAX_LINKS
        read = Read(holder, tuple(links), prefix + ".".join(names[:index + 1]), live)
        self.reads.append(read)
        return read


def _signal_handler_code() -> set:
    """The code of the Python signal handlers set now."""
    code = set()
    for number in signal.valid_signals():
        handler = signal.getsignal(number)
        handler = getattr(handler, "__func__", handler)
        if hasattr(handler, "__code__"):
            code.add(handler.__code__)
    return code


def chains_of(code) -> list[tuple]:
    """(kind, root name, attribute names) for each chain of loads in `code`'s bytecode:
    kind "global" for LOAD_GLOBAL, "local" for an argument or a local; a method loaded
    for a call (`F.relu(x)`) ends its chain; `x.n += 1` (COPY, then LOAD_ATTR) is one.
    A local the code sets once, from a chain (`cfg = self.cfg`), stands for that chain
    where it is loaded (`cfg.scale` is `self.cfg.scale`)."""
    chains = _CHAINS.get(code)
    if chains is None:
        instructions = list(dis.get_instructions(code))
        stores = Counter(i.argval for i in instructions if i.opname == "STORE_FAST")
        aliases: dict[str, tuple] = {}  # a local set once from a chain -> the chain
        chains = []
        current = None
        for instruction in instructions:
            name = instruction.opname
            if name in _ROOTS:
                if current is not None:
                    chains.append(current)
                kind = "global" if name in ("LOAD_GLOBAL", "LOAD_NAME") else "local"
                current = (kind, instruction.argval, ())
                if name != "LOAD_DEREF":
                    current = aliases.get(instruction.argval, current)
                continue
            if (name == "STORE_FAST" and current is not None and not instruction.is_jump_target
                    and stores[instruction.argval] == 1):  # (not where two branches meet)
                aliases[instruction.argval] = current
            if current is not None and name == "COPY" and instruction.arg == 1:
                continue
            if name in ("LOAD_ATTR", "LOAD_METHOD") and current is not None:
                current = (current[0], current[1], (*current[2], instruction.argval))
                if name == "LOAD_ATTR" and not _loads_method(instruction):
                    continue
            if current is not None:  # (a method ends the chain, itself its last link)
                chains.append(current)
            current = None
        if current is not None:
            chains.append(current)
        chains = [c for c in dict.fromkeys(chains) if c[0] == "global" or c[2]]
        _CHAINS[code] = chains
    return chains


_CHAINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # code -> its chains


def print_line_of(code) -> int | None:
    """The first line of `code` that loads the name print, or None."""
    if code not in _PRINTS:
        _PRINTS[code] = next((i.positions.lineno for i in dis.get_instructions(code)
                              if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")
                              and i.argval == "print"), None)
    return _PRINTS[code]


_PRINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # code -> its print line


def _loads_method(instruction) -> bool:
    """A LOAD_ATTR that loads a method for a call (Python 3.12 flags it in its arg)."""
    return sys.version_info >= (3, 12) and bool(instruction.arg & 1)


def _lookup(owner, name: str) -> tuple[list, object]:
    """([(attributes, their owner, what `name` gave there)], owner.name or MISSING):
    the owner's own __dict__, then, for an attribute it lacks, the class that holds it
    (a method by identity; a property, whose code a check would run, ends the chain)."""
    attributes = getattr(owner, "__dict__", None)
    if attributes is None or _is_library_module(owner):
        return [], MISSING  # __slots__, a builtin; NumPy's or minigrad's functions
    value = attributes.get(name, MISSING)
    if isinstance(owner, Module):  # its attributes are guards.py's, as the step found them
        return [], value
    if value is not MISSING:
        if isinstance(owner, type) and _is_descriptor(value):
            return [], MISSING
        return [(attributes, owner, value)], value
    found = [(attributes, owner, MISSING)]
    classes = owner.__mro__[1:] if isinstance(owner, type) else type(owner).__mro__
    for cls in classes:
        inherited = vars(cls).get(name, MISSING)
        if inherited is not MISSING:
            if _is_descriptor(inherited):
                return found, MISSING
            return [*found, (vars(cls), cls, inherited)], inherited
    return found, MISSING


def _is_descriptor(attribute) -> bool:
    """A method or a property of a class: what an access gives is made by its __get__
    (and a capture's patches replace some of them while it runs)."""
    return hasattr(type(attribute), "__get__")


def _is_library_module(owner) -> bool:
    """A Python module of minigrad, the standard library or an installed package."""
    return (isinstance(owner, types.ModuleType)
            and (getattr(owner, "__file__", None) or "<").startswith(_library_folders()))


def _remember(value):
    """remember(value), but a container holding more than MAX_ITEMS items (nested ones
    counted) by identity, for it is checked at every call."""
    if isinstance(value, CONTAINERS) and _items(value, MAX_ITEMS) > MAX_ITEMS:
        return value
    return remember(value)


def _items(value, limit: int) -> int:
    """How many items a container holds, nested ones counted, up to just past `limit`."""
    count = 0
    for item in (value.values() if isinstance(value, dict) else value):
        count += 1
        if isinstance(item, CONTAINERS):
            count += _items(item, limit - count)
        if count > limit:
            break
    return count


def _is_scalar(value) -> bool:
    """A number, a string, None or an enum member."""
    return type(value) in PLAIN or isinstance(value, (np.generic, enum.Enum))


def _followable(value) -> bool:
    """An object whose own attributes a chain may go on into: not a value compared by
    value, a tensor, an array or a function (their attributes are not settings)."""
    return not (type(value) in PLAIN
                or isinstance(value, (*CONTAINERS, Tensor, np.ndarray, np.generic, enum.Enum,
                                      types.FunctionType, types.BuiltinFunctionType,
                                      types.MethodType, staticmethod, classmethod)))
