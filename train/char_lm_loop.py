"""Training and scoring a CharLM, in code that takes the library as an argument, so that
minigrad and PyTorch run the very same steps on the same batches (`--compare-torch`)."""

import math
import time
from dataclasses import dataclass, field

import numpy as np

from train.char_lm_config import RunConfig
from train.char_lm_model import char_lm_class


@dataclass
class Learner:
    """A model, its Adam and the library and device they live on."""

    library: object  # the minigrad or torch module
    model: object
    optimizer: object
    device: object


@dataclass
class Progress:
    """Where a run is: optimizer steps done, the loss of each, and the validation
    perplexity after each finished epoch."""

    step: int = 0
    losses: list[float] = field(default_factory=list)
    validation: list[float] = field(default_factory=list)


def new_learner(library, config: RunConfig, vocab_size: int, device) -> Learner:
    """A fresh model seeded by config.seed, with Adam(config.lr)."""
    library.manual_seed(config.seed)
    model = char_lm_class(library)(config.model_config(vocab_size)).to(device)
    return Learner(library, model, library.optim.Adam(model.parameters(), lr=config.lr), device)


def torch_twin(learner: Learner, config: RunConfig, vocab_size: int, threads: int) -> Learner:
    """The same model in PyTorch, on the CPU, starting from `learner`'s current weights
    (the parameter names match); its own fresh Adam."""
    import torch  # deferred: the comparison is optional

    torch.set_num_threads(threads)
    twin = new_learner(torch, config, vocab_size, "cpu")
    twin.model.load_state_dict({name: torch.from_numpy(tensor.cpu().numpy().copy())
                                for name, tensor in learner.model.state_dict().items()})
    return twin


def train_step(learner: Learner, batch: np.ndarray, clip: float) -> float:
    """One Adam step on a batch of windows (B, T + 1) (see char_lm_data.windows): the mean
    cross entropy of each input position's next character, gradients clipped to a global
    norm of `clip`. Returns the loss."""
    library, model = learner.library, learner.model
    model.train()
    loss = _cross_entropy(learner, batch, reduction="mean")
    learner.optimizer.zero_grad()
    loss.backward()
    library.nn.utils.clip_grad_norm_(model.parameters(), clip)
    learner.optimizer.step()
    return loss.item()


def perplexity(learner: Learner, windows: np.ndarray, batch_size: int) -> float:
    """exp(mean cross entropy) over every target of `windows` (B, T + 1), in eval mode:
    exp(-sum log p(next char) / number of targets), each target weighing the same
    whatever batch it falls in."""
    learner.model.eval()
    total = 0.0
    with learner.library.no_grad():
        for start in range(0, len(windows), batch_size):
            total += _cross_entropy(learner, windows[start:start + batch_size],
                                    reduction="sum").item()
    return math.exp(total / (windows.shape[0] * (windows.shape[1] - 1)))


def _cross_entropy(learner: Learner, batch: np.ndarray, reduction: str):
    library = learner.library
    windows = library.tensor(batch, device=learner.device)
    logits, _ = learner.model(windows[:, :-1])
    return library.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1), reduction=reduction)


def train_epoch(learner: Learner, batches: list[np.ndarray], clip: float,
                should_stop=lambda: False) -> tuple[list[float], float, float]:
    """Steps on `batches` in order, until they are done or `should_stop()` says so between
    two steps; returns their losses, the seconds they took and the CPU seconds this
    process spent (the same on an idle machine; on a shared one, a fairer measure)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    losses = []
    for batch in batches:
        losses.append(train_step(learner, batch, clip))
        if should_stop():
            break
    return losses, time.perf_counter() - started, time.process_time() - cpu_started
