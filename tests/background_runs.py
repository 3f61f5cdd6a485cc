"""Training commands run in the background by the tests that interrupt them: start one,
wait until it has logged some steps, signal it or break something under it, then collect
its exit status and output, with a timeout, so that a job that hangs fails the test."""
from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float  # from the call to finish() to the end of the process

    def lines_of(self, program: str) -> list[str]:
        """The lines of stderr that `program` printed: they start with "program: ", once
        a progress bar's carriage returns count as line breaks."""
        return [line for line in re.split(r"[\r\n]", self.stderr)
                if line.startswith(f"{program}: ")]


class BackgroundRun:
    """A command running in ROOT, with the environment changed by `env`, its output going
    to files in `output_dir` (a pipe nobody reads could fill up and stall it)."""

    def __init__(self, command: list[str], output_dir: Path, env: dict | None = None):
        output_dir.mkdir(parents=True, exist_ok=True)
        self._stdout = output_dir / "stdout.txt"
        self._stderr = output_dir / "stderr.txt"
        env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        with open(self._stdout, "w") as stdout, open(self._stderr, "w") as stderr:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=stdout,
                                            stderr=stderr)

    def wait_for_lines(self, path: Path, count: int, timeout: float = 120) -> None:
        """Return once `path` holds `count` lines; fail if the command ends first."""
        deadline = time.monotonic() + timeout
        while not (path.exists() and path.read_text().count("\n") >= count):
            if self.process.poll() is not None:
                raise AssertionError(f"the command ended ({self.process.returncode}) before "
                                     f"{path} had {count} lines: {self._stderr.read_text()}")
            if time.monotonic() > deadline:
                self.process.kill()
                raise AssertionError(f"{path} did not reach {count} lines in {timeout} s")
            time.sleep(0.02)

    def finish(self, timeout: float) -> Finished:
        """Wait for the end (killing the command and failing after `timeout` seconds)."""
        started = time.monotonic()
        try:
            returncode = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"still running after {timeout} s: "
                                 f"{self._stderr.read_text()[-2000:]}") from None
        return Finished(returncode, self._stdout.read_text(), self._stderr.read_text(),
                        time.monotonic() - started)
