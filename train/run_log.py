"""The log of a run: one strict-JSON object per line (no bare NaN or Infinity, so any
JSON reader takes it), each with the "step" it belongs to."""

import json
import os

from minigrad.serialization.atomic import replace_file

LOG_NAME = "toy_translate_log.jsonl"


class RunLog:
    """OUT_DIR/name (toy_translate_log.jsonl by default). A fresh run empties it; a
    resumed run first drops what was logged after the checkpoint's step, so that no step
    appears twice."""

    def __init__(self, out_dir: str, name: str = LOG_NAME) -> None:
        self.path = os.path.join(out_dir, name)

    def start_fresh(self) -> None:
        open(self.path, "w").close()

    def keep_until(self, step: int) -> int:
        """Drop the records of steps after `step` (and lines a crash cut short); returns
        how many lines were dropped. The file is rewritten atomically, and not at all
        when nothing is dropped."""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines(keepends=True)
        except FileNotFoundError:
            return 0
        kept = [line for line in lines if _step_of(line) is not None and _step_of(line) <= step]
        if len(kept) == len(lines) and all(line.endswith("\n") for line in kept):
            return 0
        text = "".join(line if line.endswith("\n") else line + "\n" for line in kept)
        replace_file(self.path, lambda file: file.write(text.encode("utf-8")))
        return len(lines) - len(kept)

    def append(self, record: dict) -> None:
        """Append one record; ValueError for a NaN or infinite value (a bug upstream)."""
        line = json.dumps(record, allow_nan=False)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _step_of(line: str) -> int | None:
    """The step of a well-formed record line, else None."""
    try:
        record = json.loads(line, parse_constant=_refuse)
    except ValueError:
        return None
    step = record.get("step") if isinstance(record, dict) else None
    return step if type(step) is int else None


def _refuse(name: str):
    raise ValueError(f"{name} is not strict JSON")
