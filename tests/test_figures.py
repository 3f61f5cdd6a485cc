"""`python -m train.figures` on a tiny model trained for a few steps: every figure is
written with its panels, and what each one draws is what the model computes (attention
recomputed here from the layers' weights and inputs, the search trees against the
decoding functions, the output distribution against a teacher-forced forward)."""

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from models import MultiHeadAttention, beam_search, greedy_decode
from train.checkpoint import load_model, new_train_state, save_run
from train.config import Config
from train.data import make_dataset
from train.figures import DEFAULT_SENTENCE, draw_figures, main
from train.loop import train
from train.plots import cross_attention, plot_attention
from train.plots_decoding import (
    EXTRA_TOKENS,
    output_distribution_figure,
    search_tree,
    trace_beam_search,
    trace_greedy,
)
from train.vocab import BOS_ID, EOS_ID

ROOT = Path(__file__).resolve().parents[1]
TINY = Config(d_model=16, heads=2, layers=2, ff=32, dropout=0.0, batch_size=16, steps=40,
              warmup=10, lr_factor=0.2, eval_every=40)
SOURCE = DEFAULT_SENTENCE.split()
MATPLOTLIB_FIGURES = ("positional_encoding", "encoder_self_attention",
                      "decoder_self_attention", "encoder_decoder_attention", "decoding",
                      "output_distribution")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    """A checkpoint of TINY trained with train's own functions for 40 steps on the drawn
    sentence (half of every batch, so that its translation takes several steps) and
    sentences of the toy data set."""
    data = make_dataset(seed=0, n_train=300, n_val=20, n_test=10)
    pairs = [(SOURCE, "the black dog eats".split())] * 16 + data.train[:16]
    state = new_train_state(TINY, data.src_vocab, data.tgt_vocab, "cpu")
    train(state, data.encode(pairs), data.encode(data.val), steps=TINY.steps,
          batch_size=TINY.batch_size, seed=TINY.seed, label_smoothing=TINY.label_smoothing,
          device="cpu", eval_every=TINY.eval_every, log=lambda record: None)
    path = str(tmp_path_factory.mktemp("tiny") / "tiny.safetensors")
    save_run(path, state, TINY, data.src_vocab, data.tgt_vocab)
    return path


@pytest.fixture(scope="module")
def loaded(checkpoint):
    """(model, src_vocab, tgt_vocab) and the figures drawn for SOURCE."""
    model, src_vocab, tgt_vocab = load_model(checkpoint, "cpu")
    return model, src_vocab, tgt_vocab, draw_figures(model, SOURCE, src_vocab, tgt_vocab)


def greedy_translation(model, src_vocab, tgt_vocab) -> list[int]:
    """The translation's ids, from greedy_decode with its KV cache (not the figures' trace)."""
    model.eval()
    tokens, _ = greedy_decode(model, mg.tensor([src_vocab.encode(SOURCE)]), BOS_ID, EOS_ID,
                              max_len=len(SOURCE) + EXTRA_TOKENS)
    return tgt_vocab.encode(tgt_vocab.decode(tokens.numpy()[0]))


def recomputed_attention(model, src_ids, tgt_ids, monkeypatch) -> dict[str, list[np.ndarray]]:
    """Every attention layer's (heads, queries, keys) probabilities, recomputed in NumPy
    from the layer's weights and the inputs it received in a teacher-forced forward:
    softmax(q k^T / sqrt(d_head) + causal mask) with q = query W_Q^T + b_Q, k likewise."""
    calls = []
    forward = MultiHeadAttention.forward

    def recording_forward(layer, query, key, value, mask=None, cache=None):
        calls.append((layer, query.numpy()[0].astype(np.float64),
                      key.numpy()[0].astype(np.float64)))
        return forward(layer, query, key, value, mask, cache)

    monkeypatch.setattr(MultiHeadAttention, "forward", recording_forward)
    with mg.no_grad():
        model(mg.tensor([src_ids]), mg.tensor([[BOS_ID, *tgt_ids]]))
    monkeypatch.undo()

    def probabilities(layer, query, key, causal):
        def heads(x, linear):
            projected = x @ linear.weight.numpy().T.astype(np.float64) + linear.bias.numpy()
            return projected.reshape(len(x), layer.nhead, layer.d_head).transpose(1, 0, 2)

        q, k = heads(query, layer.w_q), heads(key, layer.w_k)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(layer.d_head)
        if causal:
            scores = scores + np.triu(np.full(scores.shape[1:], -np.inf), 1)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        return scores / scores.sum(-1, keepdims=True)

    by_layer = {id(layer): (query, key) for layer, query, key in calls}
    result = {"encoder": [], "decoder_self": [], "decoder_cross": []}
    for layer in model.encoder.layers:
        result["encoder"].append(probabilities(layer.self_attn, *by_layer[id(layer.self_attn)],
                                               causal=False))
    for layer in model.decoder.layers:
        result["decoder_self"].append(
            probabilities(layer.self_attn, *by_layer[id(layer.self_attn)], causal=True))
        result["decoder_cross"].append(
            probabilities(layer.cross_attn, *by_layer[id(layer.cross_attn)], causal=False))
    return result


def heatmaps(figure) -> list[np.ndarray]:
    """The arrays the figure's heatmaps show, panel by panel (colour bars have none)."""
    return [np.asarray(ax.images[0].get_array()) for ax in figure.axes if ax.images]


def test_each_figure_has_its_panels(loaded):
    model, _, _, figures = loaded
    layers, heads = TINY.layers, TINY.heads
    panels = {name: len(figure.axes) for name, figure in figures.items()}
    assert panels == {
        "positional_encoding": 3,  # heatmap, its colour bar, curves
        "encoder_self_attention": layers * heads + 1,  # + the colour bar
        "decoder_self_attention": layers * heads + 1,
        "encoder_decoder_attention": layers * (heads + 1) + 1,  # + the mean of heads
        "decoding": 2,  # greedy, beam search
        "output_distribution": 2,  # logits, probabilities
    }


def test_attention_plotted_is_the_models_own(loaded, monkeypatch):
    model, src_vocab, tgt_vocab, figures = loaded
    translation = greedy_translation(model, src_vocab, tgt_vocab)
    assert len(translation) >= 3, "the tiny model should have learned the drawn sentence"
    expected = recomputed_attention(model, src_vocab.encode(SOURCE), translation, monkeypatch)
    encoder = heatmaps(figures["encoder_self_attention"])
    decoder = heatmaps(figures["decoder_self_attention"])
    cross = heatmaps(figures["encoder_decoder_attention"])
    heads = TINY.heads
    for layer in range(TINY.layers):
        for head in range(heads):
            np.testing.assert_allclose(encoder[layer * heads + head],
                                       expected["encoder"][layer][head], atol=1e-5)
            np.testing.assert_allclose(decoder[layer * heads + head],
                                       expected["decoder_self"][layer][head], atol=1e-5)
            np.testing.assert_allclose(cross[layer * (heads + 1) + head],
                                       expected["decoder_cross"][layer][head], atol=1e-5)
        np.testing.assert_allclose(cross[layer * (heads + 1) + heads],
                                   expected["decoder_cross"][layer].mean(0), atol=1e-5)
    masked = np.triu(np.ones_like(decoder[0], dtype=bool), 1)
    assert all(np.all(panel[masked] == 0.0) for panel in decoder), "the future is empty"
    assert encoder[0].shape == (len(SOURCE), len(SOURCE))
    assert cross[0].shape == (len(translation) + 1, len(SOURCE))


def test_toy_translate_attention_plot_is_the_last_layers(loaded, monkeypatch, tmp_path):
    model, src_vocab, tgt_vocab, _ = loaded
    translation = tgt_vocab.decode(greedy_translation(model, src_vocab, tgt_vocab))
    weights = cross_attention(model, SOURCE, translation, src_vocab, tgt_vocab, "cpu")
    expected = recomputed_attention(model, src_vocab.encode(SOURCE),
                                    tgt_vocab.encode(translation), monkeypatch)
    np.testing.assert_allclose(weights, expected["decoder_cross"][-1], atol=1e-5)
    plot_attention(weights, SOURCE, translation, str(tmp_path / "attention.png"))
    assert (tmp_path / "attention.png").read_bytes().startswith(b"\x89PNG")


def test_positional_encoding_plotted_is_the_models_table(loaded):
    model, _, _, figures = loaded
    (table,) = heatmaps(figures["positional_encoding"])
    np.testing.assert_array_equal(table, model.positional.pe.numpy()[:50])
    position, dim = np.arange(50)[:, None], np.arange(0, TINY.d_model, 2)
    np.testing.assert_allclose(table[:, 0::2], np.sin(position / 10000 ** (dim / TINY.d_model)),
                               atol=1e-5)


def test_search_trees_are_the_searches(loaded):
    """The traced searches return what the decoding functions (with their KV cache)
    return; the kept nodes of each step are the hypotheses extended at the next one, and
    the returned nodes carry the returned log-probabilities and scores."""
    model, src_vocab, _, figures = loaded
    source_ids = src_vocab.encode(SOURCE)
    src = mg.tensor([source_ids])
    max_len = len(SOURCE) + EXTRA_TOKENS
    beam = trace_beam_search(model, source_ids, beam_size=2, top_beams=2)
    reference = beam_search(model, src, BOS_ID, EOS_ID, beam_size=2, top_beams=2,
                            max_len=max_len)[0]
    assert [h.tokens for h in beam.hypotheses] == [h.tokens for h in reference]
    np.testing.assert_allclose([h.score for h in beam.hypotheses],
                               [h.score for h in reference], atol=1e-5)
    greedy = trace_greedy(model, source_ids)
    tokens, scores = greedy_decode(model, src, BOS_ID, EOS_ID, max_len=max_len)
    assert greedy.hypotheses[0].tokens == tokens.numpy()[0].tolist()
    assert greedy.hypotheses[0].log_prob == pytest.approx(scores.item(), abs=1e-5)

    for trace in (greedy, beam):
        tree = search_tree(trace, shown=3)
        assert len(tree) == len(trace.steps)
        for step, candidates in enumerate(tree[:-1]):
            kept = {c.tokens for c in candidates if c.kept}
            assert kept == {tuple(row[1:]) for row in trace.steps[step + 1].prefixes.tolist()}
        returned = sorted((c for step in tree for c in step if c.rank), key=lambda c: c.rank)
        assert [list(c.tokens) for c in returned] == [h.tokens for h in trace.hypotheses]
        np.testing.assert_allclose([c.log_prob for c in returned],
                                   [h.log_prob for h in trace.hypotheses], rtol=1e-12)
    nodes = sum(len(step) for trace in (greedy, beam) for step in search_tree(trace, 3))
    texts = sum(len(ax.texts) for ax in figures["decoding"].axes)
    assert texts == nodes + 2  # + the <s> of each tree


@pytest.mark.parametrize("step", [1, 2])
def test_output_distribution_is_the_softmax_of_the_final_linear(loaded, step):
    model, src_vocab, tgt_vocab, _ = loaded
    greedy = trace_greedy(model, src_vocab.encode(SOURCE))
    figure = output_distribution_figure(greedy.steps[step - 1], tgt_vocab, step, top_k=10)
    prefix = [BOS_ID, *greedy.hypotheses[0].tokens[: step - 1]]
    with mg.no_grad():  # teacher forcing: the whole prefix at once, no cache
        logits = model(mg.tensor([src_vocab.encode(SOURCE)]), mg.tensor([prefix]))
    logits = logits.numpy()[0, -1].astype(np.float64)
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    top = np.argsort(-logits)[:10]
    ax_logits, ax_probabilities = figure.axes
    np.testing.assert_allclose([bar.get_width() for bar in ax_logits.patches], logits[top],
                               atol=1e-4)
    np.testing.assert_allclose([bar.get_width() for bar in ax_probabilities.patches],
                               probabilities[top], atol=1e-5)
    assert [label.get_text() for label in ax_logits.get_yticklabels()] == [
        tgt_vocab.tokens[token] for token in top]


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_command_writes_every_figure_with_graphviz(checkpoint, tmp_path, capsys):
    status, out, err = run_main(capsys, "--checkpoint", checkpoint, "--out", str(tmp_path))
    assert status == 0, err
    for name in (*MATPLOTLIB_FIGURES, "computation_graph"):
        assert (tmp_path / f"{name}.png").read_bytes().startswith(b"\x89PNG"), name
        assert str(tmp_path / f"{name}.png") in out
    assert "MatMul" in (tmp_path / "computation_graph.dot").read_text()
    assert err == ""


def test_command_without_graphviz_says_how_to_install_it(checkpoint, tmp_path, capsys,
                                                         monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing here"))
    status, out, err = run_main(capsys, "--checkpoint", checkpoint, "--out",
                                str(tmp_path / "figures"), "--sentence", "Le chat noir.")
    assert status == 0, err
    for name in MATPLOTLIB_FIGURES:
        assert (tmp_path / "figures" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "figures" / "computation_graph.png").exists()
    assert (tmp_path / "figures" / "computation_graph.dot").read_text().startswith("digraph")
    assert len(err.splitlines()) == 1 and "apt-get install graphviz" in err


@pytest.mark.parametrize("args, message", [
    (["--sentence", "le chat volant"], "words not in the French vocabulary: 'volant'"),
    (["--sentence", "..."], "none at all"),
    (["--step", "40"], "step 40 is out of range"),
    (["--beam-size", "2", "--top-beams", "3"], "need 1 <= --top-beams <= --beam-size"),
])
def test_bad_requests_fail_in_one_line(checkpoint, tmp_path, capsys, args, message):
    status, _, err = run_main(capsys, "--checkpoint", checkpoint, "--out", str(tmp_path), *args)
    assert status == 1
    assert len(err.splitlines()) == 1 and message in err
    assert not list(tmp_path.iterdir()), "nothing is written"


def test_missing_or_corrupt_checkpoint_fails_in_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    corrupt = tmp_path / "corrupt.safetensors"
    corrupt.write_bytes(b"not a checkpoint at all")
    for path, message in ((tmp_path / "missing.safetensors", "no checkpoint at"),
                          (corrupt, "cannot read the checkpoint")):
        result = subprocess.run(
            [sys.executable, "-m", "train.figures", "--checkpoint", str(path), "--out",
             str(tmp_path / "out")], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=120)
        assert result.returncode == 1
        assert len(result.stderr.splitlines()) == 1 and message in result.stderr
    assert not (tmp_path / "out").exists()
