"""A run of `python -m train.char_lm` in one checkpoint (mg.save: safetensors, written
atomically, never pickle): the model, Adam's state, the RNG state dropout draws from,
the step, every step's loss, the validation perplexities, the config and the alphabet.

Loading trusts nothing in the file: the entries, the config (each field against its
rule), the alphabet (it must be this Python's corpus's: the help topics change between
Python versions), the step against the losses and perplexities, then the model's names
and shapes. Any problem raises CheckpointError, a ValueError whose message starts with
the file's path."""

import math
import os
from collections.abc import Callable

import numpy as np

import minigrad as mg
from train.char_lm_config import RunConfig
from train.char_lm_loop import Learner, Progress, new_learner

_ENTRIES = {"model", "optimizer", "rng", "step", "losses", "validation", "config",
            "alphabet"}


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed; the message starts with its path."""


def save_run(path: str, learner: Learner, progress: Progress, config: RunConfig,
             alphabet: str) -> None:
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    mg.save({
        "model": learner.model.state_dict(),
        "optimizer": learner.optimizer.state_dict(),
        "rng": mg.get_rng_state(),
        "step": progress.step,
        "losses": np.asarray(progress.losses, dtype=np.float64),
        "validation": np.asarray(progress.validation, dtype=np.float64),
        "config": config.to_dict(),
        "alphabet": alphabet,
    }, path)


def load_run(path: str, alphabet: str, steps_per_epoch: Callable[[RunConfig], int],
             device: str) -> tuple[Learner, Progress, RunConfig]:
    """The run `save_run` wrote, continued: the global RNG is where the saved run left it.
    steps_per_epoch(config) gives the steps of the config's epoch (ValueError if it has
    none), to check the count of validation perplexities against the step."""
    try:
        saved = mg.load(path, map_location="cpu")
        if not isinstance(saved, dict) or set(saved) != _ENTRIES:
            found = sorted(map(str, saved)) if isinstance(saved, dict) else type(saved).__name__
            raise ValueError(f"not a char_lm checkpoint: expected the entries "
                             f"{sorted(_ENTRIES)}, found {str(found)[:200]}")
        try:
            config = RunConfig.from_dict(saved["config"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"config: {exc}") from None
        if saved["alphabet"] != alphabet:
            raise ValueError("its alphabet is not this corpus's (a checkpoint of another "
                             "Python version's help topics?)")
        progress = _checked_progress(saved, steps_per_epoch(config))
        mg.set_rng_state(saved["rng"])  # checks it before the model is built
        learner = new_learner(mg, config, len(alphabet), device)
        try:
            learner.model.load_state_dict(saved["model"])
        except RuntimeError as exc:  # names and shapes, one line per problem
            raise ValueError("model: " + "; ".join(str(exc).split("\n\t")[1:])) from None
        learner.optimizer.load_state_dict(saved["optimizer"])
        mg.set_rng_state(saved["rng"])
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        message = str(exc) if str(exc).startswith(path) else f"{path}: {exc}"
        raise CheckpointError(message) from exc
    return learner, progress, config


def _checked_progress(saved: dict, steps_per_epoch: int) -> Progress:
    step, losses, validation = saved["step"], saved["losses"], saved["validation"]
    if type(step) is not int or step < 0:
        raise ValueError(f"step must be an integer >= 0, got {step!r}")
    for name, values, count in (("losses", losses, step),
                                ("validation", validation, step // steps_per_epoch)):
        if not (isinstance(values, np.ndarray) and values.dtype == np.float64
                and values.shape == (count,) and np.isfinite(values).all()):
            found = (f"{values.dtype} array of shape {values.shape}"
                     if isinstance(values, np.ndarray) else type(values).__name__)
            raise ValueError(f"{name} must be {count} finite float64 values at step {step}, "
                             f"got {found}")
    if not all(math.isfinite(x) and x >= 1 for x in validation):
        raise ValueError("validation perplexities must be at least 1")
    return Progress(step, losses.tolist(), validation.tolist())
