"""Pictures of a run: the training loss curve, and the attention of one sentence as the
Illustrated Transformer draws it, a heatmap per head and per layer (encoder
self-attention, masked decoder self-attention, encoder-decoder attention).

Figures are built with matplotlib's object API (`Figure`, no pyplot), so drawing one
touches no global state and needs no display; matplotlib is imported only when a figure
is drawn.
"""

from collections.abc import Sequence

import numpy as np

import minigrad as mg
from train.vocab import BOS, BOS_ID, EOS, Vocab

# white at 0, so that the keys a mask hides (weight exactly 0) show as empty cells
ATTENTION_COLORMAP = "Blues"


def new_figure(width: float, height: float):
    """An empty matplotlib Figure (inches) with constrained layout."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def save_figure(figure, path: str, dpi: int = 100) -> str:
    """Write the figure as an image whose type is the path's suffix; returns the path."""
    figure.savefig(path, dpi=dpi)
    return path


def sentence_attention(model, source: Sequence[str], translation: Sequence[str],
                       src_vocab: Vocab, tgt_vocab: Vocab,
                       device: str = "cpu") -> dict[str, np.ndarray]:
    """Every layer's attention while the model reads the source and <s> + translation
    (teacher forcing, eval mode), as (heads, queries, keys) arrays named like
    `Transformer.attention_weights`. Decoder query i predicts translation word i (the
    last one predicts </s>)."""
    model.eval()
    src = mg.tensor([src_vocab.encode(source)], device=device)
    tgt = mg.tensor([[BOS_ID, *tgt_vocab.encode(translation)]], device=device)
    with mg.no_grad(), model.keeping_attention_weights():
        model(src, tgt)
    return {name: weights.numpy()[0] for name, weights in model.attention_weights().items()}


def cross_attention(model, source: Sequence[str], translation: Sequence[str],
                    src_vocab: Vocab, tgt_vocab: Vocab, device: str,
                    layer: int = -1) -> np.ndarray:
    """(heads, len(translation) + 1, len(source)) weights of a decoder layer's
    encoder-decoder attention (see `sentence_attention`)."""
    layer_index = range(len(model.decoder.layers))[layer]
    attention = sentence_attention(model, source, translation, src_vocab, tgt_vocab, device)
    return attention[f"decoder.{layer_index}.cross_attn"]


def layer_stack(attention: dict[str, np.ndarray], stack: str, kind: str) -> np.ndarray:
    """(layers, heads, queries, keys): the `kind` attention ("self_attn", "cross_attn") of
    every layer of `stack` ("encoder", "decoder"), bottom layer first."""
    layers = []
    while f"{stack}.{len(layers)}.{kind}" in attention:
        layers.append(attention[f"{stack}.{len(layers)}.{kind}"])
    if not layers:
        raise KeyError(f"layer_stack: no {stack} {kind} weights among {sorted(attention)}")
    return np.stack(layers)


def attention_grid_figure(weights: np.ndarray, queries: Sequence[str], keys: Sequence[str],
                          title: str, query_label: str, key_label: str,
                          mean_of_heads: bool = False,
                          layer_names: Sequence[str] | None = None):
    """Heatmaps of weights (layers, heads, queries, keys): a row per layer (named
    "layer 1", "layer 2", ... unless `layer_names` says), a column per head, plus a last
    column with the mean over heads when asked, and one colour bar."""
    layers, heads, n_queries, n_keys = weights.shape
    if layer_names is None:
        layer_names = [f"layer {layer + 1}" for layer in range(layers)]
    panels = [weights[:, head] for head in range(heads)]
    names = [f"head {head + 1}" for head in range(heads)]
    if mean_of_heads:
        panels.append(weights.mean(axis=1))
        names.append("mean of heads")
    cell = 0.32  # inches per token
    width = len(panels) * (n_keys * cell + 0.7) + 1.6
    height = layers * (n_queries * cell + 1.3) + 0.8
    figure = new_figure(width, height)
    axes = figure.subplots(layers, len(panels), squeeze=False)
    for layer in range(layers):
        for column, (panel, name) in enumerate(zip(panels, names, strict=True)):
            ax = axes[layer, column]
            image = ax.imshow(panel[layer], cmap=ATTENTION_COLORMAP, vmin=0.0, vmax=1.0,
                              interpolation="nearest")
            ax.set_title(f"{layer_names[layer]}, {name}", fontsize=9)
            ax.set_xticks(range(n_keys), keys, rotation=90, fontsize=8)
            ax.set_yticks(range(n_queries), queries if column == 0 else [], fontsize=8)
            if layer == layers - 1:
                ax.set_xlabel(key_label, fontsize=8)
        axes[layer, 0].set_ylabel(query_label, fontsize=8)
    figure.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    figure.suptitle(title)
    return figure


def encoder_self_attention_figure(attention: dict[str, np.ndarray], source: Sequence[str]):
    """Every encoder layer's self-attention over the source, a panel per head."""
    return attention_grid_figure(
        layer_stack(attention, "encoder", "self_attn"), source, source,
        f"encoder self-attention: {' '.join(source)}", "query (word being encoded)", "key")


def decoder_self_attention_figure(attention: dict[str, np.ndarray],
                                  translation: Sequence[str]):
    """Every decoder layer's masked self-attention over <s> + translation: the upper
    triangle (the future) stays empty."""
    inputs = [BOS, *translation]
    return attention_grid_figure(
        layer_stack(attention, "decoder", "self_attn"), inputs, inputs,
        f"masked decoder self-attention: {' '.join(inputs)}", "query (decoder input)",
        "key (earlier decoder inputs)")


def cross_attention_figure(weights: np.ndarray, source: Sequence[str],
                           translation: Sequence[str],
                           layer_names: Sequence[str] | None = None):
    """Encoder-decoder attention (layers, heads, len(translation) + 1, len(source)), a
    panel per head and one for their mean; rows are named by the word being predicted."""
    predicted = [*translation, EOS][: weights.shape[2]]
    return attention_grid_figure(
        weights, predicted, source, f"encoder-decoder attention: {' '.join(source)}",
        "predicting", "source word", mean_of_heads=True, layer_names=layer_names)


def plot_attention(weights: np.ndarray, source: Sequence[str], translation: Sequence[str],
                   path: str) -> None:
    """Save the last decoder layer's encoder-decoder attention (heads, out_len, src_len),
    as `cross_attention` gives it: a heatmap per head and one for their mean."""
    figure = cross_attention_figure(weights[None], source, translation,
                                    layer_names=["last layer"])
    save_figure(figure, path)


def plot_loss_curve(losses: Sequence[float], val_losses: dict[int, float], path: str) -> None:
    """Save the training loss per step (and its running mean) with the validation losses."""
    steps = np.arange(1, len(losses) + 1)
    window = max(1, len(losses) // 50)
    smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
    figure = new_figure(7, 4)
    ax = figure.subplots()
    ax.plot(steps, losses, alpha=0.3, label="training loss (label smoothed)")
    ax.plot(steps[window - 1 :], smooth, label=f"running mean of {window}")
    if val_losses:
        ax.plot(list(val_losses), list(val_losses.values()), "o-", label="validation loss")
    ax.set_xlabel("step")
    ax.set_ylabel("cross entropy per token")
    ax.set_yscale("log")
    ax.legend()
    save_figure(figure, path)
