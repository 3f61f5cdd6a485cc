"""Building the model and its optimizer from a Config, and saving or restoring a whole
run in one safe checkpoint (mg.save: safetensors, never pickle).

Restoring trusts nothing in the file: mg.load checks the format, then every field of the
run's header is checked here (the config's sizes and rates, the vocabularies, the step,
the loss history, the RNG state) and the config is compared with the shapes of the
tensors actually in the file, all before the model is built, so a header that claims
10^7 layers is refused instead of allocated. Any problem raises CheckpointError, a
ValueError whose message names the file."""

import math
import re

import numpy as np

import minigrad as mg
from minigrad import optim
from models import Transformer
from train.checkpoint_checks import (
    checked_config,
    checked_step,
    checked_values,
    load_entries,
    load_model_state,
    naming,
    save_entries,
)
from train.config import Config
from train.loop import TrainState
from train.vocab import PAD_ID, Vocab

# the positions the model's sinusoid table covers (Transformer's default max_len)
MAX_POSITIONS = 5000
_RUN_KEYS = {"model", "optimizer", "scheduler", "rng", "step", "losses", "val_losses",
             "config", "src_vocab", "tgt_vocab"}
_AMP_KEY = "scaler"  # the GradScaler's state, in the checkpoint of an --amp run only
_LAYER = re.compile(r"(encoder|decoder)\.layers\.(\d+)\.")


def build_model(config: Config, src_vocab: Vocab, tgt_vocab: Vocab, device: str) -> Transformer:
    """The post-norm Transformer of the paper, sized by `config`, on `device`."""
    model = Transformer(len(src_vocab), len(tgt_vocab), d_model=config.d_model,
                        nhead=config.heads, num_encoder_layers=config.layers,
                        num_decoder_layers=config.layers, dim_feedforward=config.ff,
                        dropout=config.dropout, pad_id=PAD_ID, max_len=MAX_POSITIONS)
    return model.to(device)


def new_train_state(config: Config, src_vocab: Vocab, tgt_vocab: Vocab,
                    device: str, amp: bool = False) -> TrainState:
    """A fresh model (seeded by config.seed) with Adam(0.9, 0.98, 1e-9) under NoamLR; with
    amp, a GradScaler for mixed-precision training (else a disabled one)."""
    mg.manual_seed(config.seed)
    model = build_model(config, src_vocab, tgt_vocab, device)
    # NoamLR replaces the optimizer's lr at every step, so its initial value is unused
    optimizer = optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = optim.lr_scheduler.NoamLR(optimizer, config.d_model, config.warmup,
                                          config.lr_factor)
    scaler = mg.amp.GradScaler(device, enabled=amp)
    return TrainState(model, optimizer, scheduler, scaler=scaler)


def save_run(path: str, state: TrainState, config: Config, src_vocab: Vocab,
             tgt_vocab: Vocab) -> None:
    """Write everything a resumed run needs, including the dropout RNG state."""
    save_entries(path, {
        "model": state.model.state_dict(),
        "optimizer": state.optimizer.state_dict(),
        "scheduler": state.scheduler.state_dict(),
        "rng": mg.get_rng_state(),
        "step": state.step,
        "losses": np.asarray(state.losses, dtype=np.float64),
        "val_losses": {str(step): loss for step, loss in state.val_losses.items()},
        "config": config.to_dict(),
        "src_vocab": src_vocab.to_dict(),
        "tgt_vocab": tgt_vocab.to_dict(),
        **({_AMP_KEY: state.scaler.state_dict()} if state.scaler.is_enabled() else {}),
    })


def load_run(path: str, device: str) -> tuple[TrainState, Config, Vocab, Vocab]:
    """Restore what `save_run` wrote; the global RNG continues where the saved run was."""
    with naming(path):
        saved = _load_checked(path)
        config, src_vocab, tgt_vocab = _run_header(saved)
        step = checked_step(saved["step"])
        losses = checked_values("losses", saved["losses"], step, "one per step")
        val_losses = _checked_val_losses(saved["val_losses"], step)
        _check_scheduler_matches(saved["scheduler"], config, step)
        mg.set_rng_state(saved["rng"])  # checks it now; set again once the model is built
        state = new_train_state(config, src_vocab, tgt_vocab, device, amp=_AMP_KEY in saved)
        load_model_state(state.model, saved["model"])
        state.optimizer.load_state_dict(saved["optimizer"])
        state.scheduler.load_state_dict(saved["scheduler"])
        if _AMP_KEY in saved:
            _load_scaler_state(state.scaler, saved[_AMP_KEY])
        mg.set_rng_state(saved["rng"])
    state.step, state.losses, state.val_losses = step, losses, val_losses
    return state, config, src_vocab, tgt_vocab


def load_model(path: str, device: str) -> tuple[Transformer, Vocab, Vocab]:
    """Only the trained model of a checkpoint and its vocabularies, for translating."""
    with naming(path):
        saved = _load_checked(path)
        config, src_vocab, tgt_vocab = _run_header(saved)
        model = build_model(config, src_vocab, tgt_vocab, device)
        load_model_state(model, saved["model"])
    return model, src_vocab, tgt_vocab


def _load_checked(path: str) -> dict:
    return load_entries(path, "toy_translate", _RUN_KEYS, {_AMP_KEY: "for an --amp run"})


def _run_header(saved: dict) -> tuple[Config, Vocab, Vocab]:
    """The config and vocabularies, checked, and checked against the model's tensors."""
    config = checked_config(Config, saved["config"])
    vocabs = []
    for name in ("src_vocab", "tgt_vocab"):
        try:
            vocabs.append(Vocab.from_dict(saved[name]))
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    _check_sizes(config, saved["model"], *vocabs)
    return config, vocabs[0], vocabs[1]


def _check_sizes(config: Config, model_state, src_vocab: Vocab, tgt_vocab: Vocab) -> None:
    """Compare the config's sizes with the tensors in the file, so that building the model
    allocates no more than the file holds; load_state_dict checks every shape after."""
    if not isinstance(model_state, dict) or not all(
            isinstance(name, str) and isinstance(value, mg.Tensor)
            for name, value in model_state.items()):
        raise ValueError("model: expected a dict of tensors by name")
    expected = {
        "src_embed.embedding.weight": (len(src_vocab), config.d_model),
        "tgt_embed.embedding.weight": (len(tgt_vocab), config.d_model),
        "positional.pe": (MAX_POSITIONS, config.d_model),
        "encoder.layers.0.feed_forward.linear1.weight": (config.ff, config.d_model),
        "decoder.layers.0.feed_forward.linear1.weight": (config.ff, config.d_model),
    }
    for name, shape in expected.items():
        found = tuple(model_state[name].shape) if name in model_state else "no such tensor"
        if found != shape:
            raise ValueError(f"config (d_model {config.d_model}, ff {config.ff}, vocabularies "
                             f"{len(src_vocab)}/{len(tgt_vocab)}) does not match the model's "
                             f"tensors: {name} should be {shape}, the file has {found}")
    for stack in ("encoder", "decoder"):
        layers = {int(match[2]) for match in map(_LAYER.match, model_state)
                  if match and match[1] == stack}
        # the length first: range(10**7) is not to be built for a hostile config
        if len(layers) != config.layers or layers != set(range(config.layers)):
            raise ValueError(f"config says {config.layers} layers, the file holds "
                             f"{len(layers)} {stack} layers")


def _load_scaler_state(scaler, scaler_state) -> None:
    if not isinstance(scaler_state, dict) or not scaler_state:
        raise ValueError(f"scaler must be GradScaler.state_dict()'s entries, got "
                         f"{str(scaler_state)[:60]}")
    scaler.load_state_dict(scaler_state)  # ValueError for a bad entry


def _checked_val_losses(val_losses, step: int) -> dict[int, float]:
    if not isinstance(val_losses, dict):
        raise ValueError(f"val_losses must be a dict, got {type(val_losses).__name__}")
    checked = {}
    for key, loss in val_losses.items():
        at = int(key) if isinstance(key, str) and key.isdecimal() else None
        if at is None or not 1 <= at <= step or isinstance(loss, bool) or not isinstance(
                loss, (int, float)) or not math.isfinite(loss):
            raise ValueError(f"val_losses must map steps 1..{step} to finite losses, got "
                             f"{key!r}: {loss!r}")
        checked[at] = float(loss)
    return checked


def _check_scheduler_matches(scheduler_state, config: Config, step: int) -> None:
    """The schedule must be the config's, at the checkpoint's step (NoamLR has stepped
    once per optimizer step), or the resumed run would not continue the saved one."""
    expected = {"d_model": config.d_model, "warmup_steps": config.warmup,
                "factor": config.lr_factor, "last_epoch": step}
    if not isinstance(scheduler_state, dict):
        raise ValueError(f"scheduler must be a dict, got {type(scheduler_state).__name__}")
    for name, value in expected.items():
        found = scheduler_state.get(name)
        if type(found) not in (int, float) or found != value:
            raise ValueError(f"scheduler's {name} is {found!r}, the config and step say "
                             f"{value!r}")
