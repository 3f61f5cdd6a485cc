"""A run of `python -m train.char_lm` in one checkpoint (mg.save: safetensors, written
atomically, never pickle): the model, Adam's state, the RNG state dropout draws from,
the step, every step's loss, the validation perplexities, the config and the alphabet.

Loading trusts nothing in the file: the entries, the config (each field against its
rule), the alphabet (it must be this Python's corpus's: the help topics change between
Python versions), the step against the losses and perplexities, then the model's names
and shapes. Any problem raises CheckpointError (train/checkpoint_checks.py), a ValueError
whose message starts with the file's path."""

import math
from collections.abc import Callable

import numpy as np

import minigrad as mg
from train.char_lm_config import RunConfig
from train.char_lm_loop import Learner, Progress, new_learner
from train.checkpoint_checks import (
    checked_config,
    checked_step,
    checked_values,
    load_entries,
    load_model_state,
    naming,
    save_entries,
)

_ENTRIES = {"model", "optimizer", "rng", "step", "losses", "validation", "config",
            "alphabet"}


def save_run(path: str, learner: Learner, progress: Progress, config: RunConfig,
             alphabet: str) -> None:
    save_entries(path, {
        "model": learner.model.state_dict(),
        "optimizer": learner.optimizer.state_dict(),
        "rng": mg.get_rng_state(),
        "step": progress.step,
        "losses": np.asarray(progress.losses, dtype=np.float64),
        "validation": np.asarray(progress.validation, dtype=np.float64),
        "config": config.to_dict(),
        "alphabet": alphabet,
    })


def load_run(path: str, alphabet: str, steps_per_epoch: Callable[[RunConfig], int],
             device: str) -> tuple[Learner, Progress, RunConfig]:
    """The run `save_run` wrote, continued: the global RNG is where the saved run left it.
    steps_per_epoch(config) gives the steps of the config's epoch (ValueError if it has
    none), to check the count of validation perplexities against the step."""
    with naming(path):
        saved = load_entries(path, "char_lm", _ENTRIES)
        config = checked_config(RunConfig, saved["config"])
        if saved["alphabet"] != alphabet:
            raise ValueError("its alphabet is not this corpus's (a checkpoint of another "
                             "Python version's help topics?)")
        progress = _checked_progress(saved, steps_per_epoch(config))
        mg.set_rng_state(saved["rng"])  # checks it before the model is built
        learner = new_learner(mg, config, len(alphabet), device)
        load_model_state(learner.model, saved["model"])
        learner.optimizer.load_state_dict(saved["optimizer"])
        mg.set_rng_state(saved["rng"])
    return learner, progress, config


def _checked_progress(saved: dict, steps_per_epoch: int) -> Progress:
    step = checked_step(saved["step"])
    losses = checked_values("losses", saved["losses"], step, f"one per step at step {step}")
    validation = checked_values("validation", saved["validation"], step // steps_per_epoch,
                                f"one per epoch at step {step}")
    if not all(math.isfinite(x) and x >= 1 for x in validation):
        raise ValueError("validation perplexities must be at least 1")
    return Progress(step, losses, validation)
