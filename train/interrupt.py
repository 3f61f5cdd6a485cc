"""Stopping a training command cleanly on Ctrl-C (SIGINT) or SIGTERM.

A signal arrives in the middle of whatever the program is doing, say halfway through an
optimizer step, so a handler that saved there would save half a step. These handlers only
record the signal; the training loop looks at the record between steps, where the state
is whole, stops, and the command saves it and exits with 128 + the signal's number (130
for SIGINT, 143 for SIGTERM), as a shell reports a process the signal ended.

Only while the command can still save (`StopSignals.deferred()`, around the training loop
and its save) does the first signal wait for the step boundary. A second signal, or any
signal outside that window, raises `Interrupted` at once: the user does not want to wait,
and checkpoints are written atomically (temporary file, then rename), so stopping in the
middle of a save leaves the previous checkpoint whole.

`run_stoppable` runs a command this way; `command_line` and `options_given` write the
command a stopped run prints to resume it.
"""
from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_status(signal_number: int) -> int:
    """The status of a process that stopped because of `signal_number` (the shell's)."""
    return 128 + signal_number


def signal_name(signal_number: int) -> str:
    return signal.Signals(signal_number).name


class Interrupted(BaseException):
    """A signal that stops the command at once (a BaseException, like KeyboardInterrupt:
    no `except Exception` may swallow it)."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal_name(signal_number))
        self.signal_number = signal_number


class StopSignals:
    """SIGINT and SIGTERM handlers for the time the object is entered (a context manager;
    the previous handlers come back on exit).

    Inside `deferred()` the first signal only sets `requested` to its number, for the
    training loop to see at its next step boundary; any other signal raises Interrupted.
    Off the main thread, where Python cannot install handlers, it changes nothing."""

    def __init__(self) -> None:
        self.requested = 0  # the number of the signal that asked to stop, 0 for none
        self._deferring = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {number: signal.signal(number, self._handle)
                              for number in STOP_SIGNALS}
        return self

    def __exit__(self, *exc_info) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Let the first signal wait for the loop to stop at a step boundary."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False

    def _handle(self, signal_number: int, frame) -> None:
        if self._deferring and not self.requested:
            self.requested = signal_number
            return
        raise Interrupted(signal_number)


def run_stoppable(program: str, command: Callable[[argparse.Namespace, StopSignals], int],
                  args: argparse.Namespace, kept: str) -> int:
    """command(args, stop) under StopSignals; its exit status, or, when a signal stops it
    at once, 128 + the signal's number after the line `program: stopped at once by SIGINT;
    <kept> is as it was`."""
    with StopSignals() as stop:
        try:
            return command(args, stop)
        except Interrupted as exc:
            print(f"{program}: stopped at once by {signal_name(exc.signal_number)}; {kept} "
                  "is as it was", file=sys.stderr)
            return exit_status(exc.signal_number)


def options_given(args: argparse.Namespace, parser: argparse.ArgumentParser,
                  names: tuple[str, ...]) -> dict[str, object]:
    """{"--name": value} for each of `names` whose value differs from the parser's
    default: the flags of the command line to repeat in a resume command."""
    defaults = parser.parse_args([])
    return {"--" + name.replace("_", "-"): getattr(args, name) for name in names
            if getattr(args, name) != getattr(defaults, name)}


def command_line(launcher: list[str], module: str, options: Mapping[str, object]) -> str:
    """The shell command `launcher python -m module --option value ...` (a True value is a
    bare flag, False and None are left out), quoted for a POSIX shell."""
    words = [*launcher, "python", "-m", module]
    for option, value in options.items():
        if value is True:
            words.append(option)
        elif value is not None and value is not False:
            words += [option, str(value)]
    return shlex.join(words)
