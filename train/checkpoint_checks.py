"""What the training commands' checkpoints share: a run is saved in one mg.save file
(safetensors, written atomically, never pickle) in a folder made for it, and loaded
trusting nothing in the file. Each check raises ValueError saying what the entry should
be; `naming` turns them into one CheckpointError whose message starts with the file's
path."""

import contextlib
import os
from collections.abc import Iterator

import numpy as np

import minigrad as mg


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message starts with its path."""


def save_entries(path: str, entries: dict) -> None:
    """mg.save(entries, path), creating the folder first."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    mg.save(entries, path)


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """Turn what reading a run raises for a bad file (ValueError, or KeyError and
    TypeError from entries of the wrong kind) into a CheckpointError naming the file."""
    try:
        yield
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        message = str(exc) if str(exc).startswith(path) else f"{path}: {exc}"
        raise CheckpointError(message) from exc


def load_entries(path: str, command: str, required: set[str],
                 optional: dict[str, str] | None = None) -> dict:
    """mg.load (host copies: a model moves them to its device), then the run's entries:
    every `required` one, and of `optional` (name -> when it is there) any."""
    optional = optional or {}
    saved = mg.load(path, map_location="cpu")
    if not isinstance(saved, dict) or set(saved) - set(optional) != required:
        found = sorted(map(str, saved)) if isinstance(saved, dict) else type(saved).__name__
        extra = "".join(f" (and {name!r} {when})" for name, when in optional.items())
        raise ValueError(f"not a {command} checkpoint: expected the entries "
                         f"{sorted(required)}{extra}, found {str(found)[:200]}")
    return saved


def checked_config(config_class, values):
    """The checkpoint's config, built by config_class.from_dict (which checks each field)."""
    try:
        return config_class.from_dict(values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"config: {exc}") from None


def checked_step(step) -> int:
    if type(step) is not int or step < 0:
        raise ValueError(f"step must be an integer >= 0, got {step!r}")
    return step


def checked_values(name: str, values, count: int, which: str) -> list[float]:
    """A history saved as a float64 array: `count` finite values (`which`: "one per step",
    ...)."""
    if not (isinstance(values, np.ndarray) and values.dtype == np.float64
            and values.shape == (count,) and np.isfinite(values).all()):
        found = (f"{values.dtype} array of shape {values.shape}"
                 if isinstance(values, np.ndarray) else type(values).__name__)
        raise ValueError(f"{name} must be {count} finite float64 values ({which}), got "
                         f"{found}")
    return values.tolist()


def load_model_state(model, model_state: dict) -> None:
    """model.load_state_dict, its problems (names and shapes) in one line."""
    try:
        model.load_state_dict(model_state)
    except RuntimeError as exc:
        raise ValueError("model: " + "; ".join(str(exc).split("\n\t")[1:])) from None
