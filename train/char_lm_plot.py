"""The perplexity curve of a `python -m train.char_lm` run, as a PNG (matplotlib's object
API through train.plots: no pyplot, no display)."""

from collections.abc import Sequence

import numpy as np

from train.plots import new_figure, save_figure


def plot_perplexity(losses: Sequence[float], validation: dict[str, Sequence[float]],
                    steps_per_epoch: int, unigram: float, path: str) -> None:
    """Training perplexity exp(loss) per step and its running mean, each curve of
    `validation` (a label -> the validation perplexity after each epoch), and the unigram
    model's perplexity as the line to beat."""
    steps = np.arange(1, len(losses) + 1)
    window = max(1, len(losses) // 50)
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
    figure = new_figure(7, 4)
    ax = figure.subplots()
    ax.plot(steps, np.exp(losses), alpha=0.3, label="training (per step)")
    ax.plot(steps[window - 1:], np.exp(smooth), label=f"training, running mean of {window}")
    for label, perplexities in validation.items():
        epoch_ends = steps_per_epoch * np.arange(1, len(perplexities) + 1)
        ax.plot(epoch_ends, perplexities, "o-", label=label)
    ax.axhline(unigram, color="gray", linestyle="--", label="unigram (validation)")
    ax.set_xlabel("step")
    ax.set_ylabel("perplexity per character")
    ax.set_yscale("log")
    ax.legend()
    save_figure(figure, path)
