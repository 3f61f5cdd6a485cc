"""Building the model and its optimizer from a Config, and saving or restoring a whole
run in one safe checkpoint (mg.save: safetensors, never pickle)."""

import os

import numpy as np

import minigrad as mg
from minigrad import optim
from models import Transformer
from train.config import Config
from train.loop import TrainState
from train.vocab import PAD_ID, Vocab


def build_model(config: Config, src_vocab: Vocab, tgt_vocab: Vocab, device: str) -> Transformer:
    """The post-norm Transformer of the paper, sized by `config`, on `device`."""
    model = Transformer(len(src_vocab), len(tgt_vocab), d_model=config.d_model,
                        nhead=config.heads, num_encoder_layers=config.layers,
                        num_decoder_layers=config.layers, dim_feedforward=config.ff,
                        dropout=config.dropout, pad_id=PAD_ID)
    return model.to(device)


def new_train_state(config: Config, src_vocab: Vocab, tgt_vocab: Vocab,
                    device: str) -> TrainState:
    """A fresh model (seeded by config.seed) with Adam(0.9, 0.98, 1e-9) under NoamLR."""
    mg.manual_seed(config.seed)
    model = build_model(config, src_vocab, tgt_vocab, device)
    # NoamLR replaces the optimizer's lr at every step, so its initial value is unused
    optimizer = optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = optim.lr_scheduler.NoamLR(optimizer, config.d_model, config.warmup,
                                          config.lr_factor)
    return TrainState(model, optimizer, scheduler)


def save_run(path: str, state: TrainState, config: Config, src_vocab: Vocab,
             tgt_vocab: Vocab) -> None:
    """Write everything a resumed run needs, including the dropout RNG state."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    mg.save({
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
    }, path)


def load_run(path: str, device: str) -> tuple[TrainState, Config, Vocab, Vocab]:
    """Restore what `save_run` wrote; the global RNG continues where the saved run was."""
    saved = mg.load(path)
    config, src_vocab, tgt_vocab = _run_header(saved)
    state = new_train_state(config, src_vocab, tgt_vocab, device)
    state.model.load_state_dict(saved["model"])
    state.optimizer.load_state_dict(saved["optimizer"])
    state.scheduler.load_state_dict(saved["scheduler"])
    mg.set_rng_state(saved["rng"])
    state.step = int(saved["step"])
    state.losses = [float(loss) for loss in saved["losses"]]
    state.val_losses = {int(step): loss for step, loss in saved["val_losses"].items()}
    return state, config, src_vocab, tgt_vocab


def load_model(path: str, device: str) -> tuple[Transformer, Vocab, Vocab]:
    """Only the trained model of a checkpoint and its vocabularies, for translating."""
    saved = mg.load(path)
    config, src_vocab, tgt_vocab = _run_header(saved)
    model = build_model(config, src_vocab, tgt_vocab, device)
    model.load_state_dict(saved["model"])
    return model, src_vocab, tgt_vocab


def _run_header(saved: dict) -> tuple[Config, Vocab, Vocab]:
    return (Config.from_dict(saved["config"]), Vocab.from_dict(saved["src_vocab"]),
            Vocab.from_dict(saved["tgt_vocab"]))
