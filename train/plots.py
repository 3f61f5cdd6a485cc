"""Pictures of a run: the encoder-decoder attention of one sentence, one panel per head
(the heatmap the Illustrated Transformer draws), and the training loss curve."""

from collections.abc import Sequence

import numpy as np

import minigrad as mg
from train.vocab import BOS_ID, Vocab


def cross_attention(model, source: Sequence[str], translation: Sequence[str],
                    src_vocab: Vocab, tgt_vocab: Vocab, device: str,
                    layer: int = -1) -> np.ndarray:
    """(heads, len(translation) + 1, len(source)) weights of a decoder layer's
    encoder-decoder attention while the model reads <s> + translation (teacher forcing);
    row i is the attention paid when predicting word i (the last row predicts </s>)."""
    model.eval()
    src = mg.tensor([src_vocab.encode(source)], device=device)
    tgt = mg.tensor([[BOS_ID, *tgt_vocab.encode(translation)]], device=device)
    with mg.no_grad():
        model(src, tgt)
    layer_index = range(len(model.decoder.layers))[layer]
    return model.attention_weights()[f"decoder.{layer_index}.cross_attn"].numpy()[0]


def plot_attention(weights: np.ndarray, source: Sequence[str], translation: Sequence[str],
                   path: str) -> None:
    """Save the (heads, out_len, src_len) weights as a row of heatmaps, one per head."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    heads = weights.shape[0]
    rows = [*translation, "</s>"][: weights.shape[1]]
    fig, axes = plt.subplots(1, heads, figsize=(2.6 * heads + 1, 0.45 * len(rows) + 2),
                             squeeze=False)
    for head, ax in enumerate(axes[0]):
        ax.imshow(weights[head], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(f"head {head + 1}")
        ax.set_xticks(range(len(source)), source, rotation=90)
        ax.set_yticks(range(len(rows)), rows if head == 0 else [""] * len(rows))
    fig.suptitle("encoder-decoder attention: " + " ".join(source))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_loss_curve(losses: Sequence[float], val_losses: dict[int, float], path: str) -> None:
    """Save the training loss per step (and its running mean) with the validation losses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.arange(1, len(losses) + 1)
    window = max(1, len(losses) // 50)
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, losses, alpha=0.3, label="training loss (label smoothed)")
    ax.plot(steps[window - 1 :], smooth, label=f"running mean of {window}")
    if val_losses:
        ax.plot(list(val_losses), list(val_losses.values()), "o-", label="validation loss")
    ax.set_xlabel("step")
    ax.set_ylabel("cross entropy per token")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
