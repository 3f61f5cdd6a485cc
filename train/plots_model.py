"""Pictures of the model itself: the sinusoidal positional encoding it adds to the
embeddings, and the computation graph minigrad records for a tiny self-attention."""

import math
import os
import shutil
from collections.abc import Sequence

import numpy as np

import minigrad as mg
from models import MultiHeadAttention
from train.plots import new_figure

GRAPHVIZ_INSTALL = "apt-get install graphviz, brew install graphviz or conda install graphviz"


def positional_encoding_figure(table: np.ndarray, positions: int = 50,
                               dims: Sequence[int] | None = None):
    """The first `positions` rows of the positional-encoding table (max_len, d_model) as a
    heatmap, and a few of its dimensions as curves over the positions (by default the
    sine/cosine pair of the fastest frequency and two slower ones)."""
    table = table[:positions]
    d_model = table.shape[1]
    if dims is None:
        dims = sorted({0, 1, d_model // 8, d_model // 4})
    figure = new_figure(11, 4.2)
    ax_table, ax_curves = figure.subplots(1, 2, width_ratios=[1.1, 1])
    image = ax_table.imshow(table, aspect="auto", cmap="RdBu", vmin=-1.0, vmax=1.0,
                            interpolation="nearest")
    ax_table.set_xlabel("dimension (even: sin, odd: cos)")
    ax_table.set_ylabel("position")
    ax_table.set_title(f"PE table, {len(table)} positions x {d_model} dimensions", fontsize=9)
    figure.colorbar(image, ax=ax_table, label="value added to the embedding")
    for dim in dims:
        # PE[pos, 2i] = sin(pos * w_i), PE[pos, 2i+1] = cos(pos * w_i), w_i = 10000^(-2i/d)
        period = 2 * math.pi * 10000.0 ** ((dim - dim % 2) / d_model)
        kind = "cos" if dim % 2 else "sin"
        ax_curves.plot(np.arange(len(table)), table[:, dim],
                       label=f"dimension {dim} ({kind}, period {period:.0f})")
    ax_curves.set_xlabel("position")
    ax_curves.set_title("a few dimensions across positions", fontsize=9)
    ax_curves.legend(fontsize=8, loc="lower left")
    figure.suptitle("sinusoidal positional encoding")
    return figure


def computation_graph_example() -> mg.Tensor:
    """The output of one MultiHeadAttention (d_model 4, 2 heads) over 3 tokens: the
    Illustrated Transformer's self-attention, small enough for its graph to be read."""
    attention = MultiHeadAttention(d_model=4, nhead=2)
    x = mg.randn(1, 3, 4, requires_grad=True)
    return attention(x, x, x)


def write_computation_graph(directory: str, name: str = "computation_graph") -> str | None:
    """Write the example's graph as DOT text (NAME.dot) and, when Graphviz's `dot` is
    installed, render it (NAME.png); returns the PNG's path, or None without `dot`."""
    output = computation_graph_example()
    with open(os.path.join(directory, name + ".dot"), "w", encoding="utf-8") as handle:
        handle.write(mg.viz.to_dot(output))
    if shutil.which("dot") is None:
        return None
    return mg.viz.render(output, os.path.join(directory, name + ".png"))
