"""Decoding, drawn: the candidates greedy decoding and beam search weighed at every step,
as a tree with their log-probabilities, and the output distribution of one step (the
final Linear's logits and their softmax).

The searches drawn are the real ones of models/decoding.py. The model is handed to them
wrapped in `_RecordingModel`, which passes every call through and records the prefixes it
was given and the next-token logits and log-probabilities it gave back. The searches run
without a KV cache, so that every call sees the whole prefixes of the live hypotheses
(with or without the cache they choose the same tokens: tests/test_decoding.py).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import minigrad as mg
from models import Hypothesis, beam_search, greedy_decode
from train.plots import new_figure
from train.vocab import BOS, BOS_ID, EOS_ID, Vocab

# how much longer than its source a translation may get (do-support adds "does not")
EXTRA_TOKENS = 10

_KEPT = {"facecolor": "#fdd0a2", "edgecolor": "#e6550d"}
_RETURNED = {"facecolor": "#a1d99b", "edgecolor": "#238b45"}
_DROPPED = {"facecolor": "white", "edgecolor": "#bdbdbd"}


@dataclass(frozen=True)
class DecodingStep:
    """What a search saw at one step: the prefixes (rows, t) of its hypotheses, starting
    with <s>, and for each row the next token's logits (rows, vocab) from the final
    Linear and their log_softmax, the numbers the search ranked."""

    prefixes: np.ndarray
    logits: np.ndarray
    log_probs: np.ndarray


@dataclass(frozen=True)
class SearchTrace:
    """Every step of one search over one source, and what it returned, best first
    (greedy decoding returns one hypothesis, scored by its log-probability)."""

    steps: list[DecodingStep]
    hypotheses: list[Hypothesis]


@dataclass(frozen=True)
class Candidate:
    """A node of the search tree: its tokens after <s> (the last one is the node's own),
    the sum of their log-probabilities, whether the search kept it as a live hypothesis
    for the next step, and its rank (from 1) and score if the search returned it."""

    tokens: tuple[int, ...]
    log_prob: float
    kept: bool
    rank: int | None = None
    score: float | None = None


class _RecordingModel:
    """The model, as the decoding functions use it, recording every decode call."""

    def __init__(self, model):
        self.model = model
        self.pad_id = model.pad_id
        self.steps: list[DecodingStep] = []

    def encode(self, src: mg.Tensor, src_pad_mask: mg.Tensor | None = None) -> mg.Tensor:
        return self.model.encode(src, src_pad_mask)

    def decode(self, tgt: mg.Tensor, memory: mg.Tensor, src_pad_mask: mg.Tensor | None,
               tgt_pad_mask: mg.Tensor | None = None, cache=None) -> mg.Tensor:
        logits = self.model.decode(tgt, memory, src_pad_mask, tgt_pad_mask, cache)
        last = logits[:, -1]
        self.steps.append(DecodingStep(np.array(tgt.numpy()),
                                       last.numpy().astype(np.float64),
                                       last.log_softmax(-1).numpy().astype(np.float64)))
        return logits


def trace_greedy(model, source_ids: Sequence[int]) -> SearchTrace:
    """Greedy decoding of one source (token ids, no specials), step by step."""
    model.eval()
    recorder = _RecordingModel(model)
    tokens, scores = greedy_decode(recorder, mg.tensor([list(source_ids)]), BOS_ID, EOS_ID,
                                   max_len=len(source_ids) + EXTRA_TOKENS, use_cache=False)
    score = float(scores.numpy()[0])
    return SearchTrace(recorder.steps, [Hypothesis(tokens.numpy()[0].tolist(), score, score)])


def trace_beam_search(model, source_ids: Sequence[int], beam_size: int,
                      top_beams: int) -> SearchTrace:
    """Beam search (GNMT length penalty, models.beam_search) of one source, step by step."""
    model.eval()
    recorder = _RecordingModel(model)
    hypotheses = beam_search(recorder, mg.tensor([list(source_ids)]), BOS_ID, EOS_ID,
                             beam_size=beam_size, top_beams=top_beams,
                             max_len=len(source_ids) + EXTRA_TOKENS, use_cache=False)[0]
    return SearchTrace(recorder.steps, hypotheses)


def search_tree(trace: SearchTrace, shown: int) -> list[list[Candidate]]:
    """The candidates of every step: for each distinct prefix the search extended, its
    `shown` most likely next tokens, plus any it kept or returned beyond those."""
    returned = {tuple(hypothesis.tokens): (rank, hypothesis.score)
                for rank, hypothesis in enumerate(trace.hypotheses, start=1)}
    prefix_log_probs = {(): 0.0}
    tree = []
    for index, step in enumerate(trace.steps):
        later = trace.steps[index + 1 :]
        kept = {tuple(row[1:].tolist()) for row in later[0].prefixes} if later else set()
        candidates: list[Candidate] = []
        extended = set()
        for row, prefix_row in enumerate(step.prefixes):
            prefix = tuple(prefix_row[1:].tolist())
            if prefix in extended:  # beam search starts from copies of <s>, one of them live
                continue
            extended.add(prefix)
            ranked = np.argsort(-step.log_probs[row], kind="stable")
            wanted = set(ranked[:shown].tolist()) | {
                tokens[-1] for tokens in kept | returned.keys() if tokens[:-1] == prefix}
            for token in (int(token) for token in ranked if token in wanted):
                tokens = (*prefix, token)
                rank, score = returned.get(tokens, (None, None))
                log_prob = prefix_log_probs[prefix] + step.log_probs[row, token]
                candidates.append(Candidate(tokens, float(log_prob), tokens in kept, rank, score))
        prefix_log_probs.update((c.tokens, c.log_prob) for c in candidates if c.kept)
        tree.append(candidates)
    return tree


def decoding_figure(greedy: SearchTrace, beam: SearchTrace, tgt_vocab: Vocab,
                    source: Sequence[str], beam_size: int, shown: int):
    """Two trees, greedy decoding above beam search: each column a step, each node a
    candidate next word with the summed log-probability of its hypothesis."""
    from matplotlib.patches import Patch

    trees = [search_tree(greedy, shown), search_tree(beam, shown)]
    steps = max(len(tree) for tree in trees)
    rows = [max(len(candidates) for candidates in tree) for tree in trees]
    figure = new_figure(1.25 * (steps + 1) + 1.0, 0.62 * sum(rows) + 2.4)
    axes = figure.subplots(2, 1, height_ratios=rows)
    _draw_tree(axes[0], trees[0], tgt_vocab, steps, scored=False,
               title="greedy: the most likely word at every step")
    _draw_tree(axes[1], trees[1], tgt_vocab, steps, scored=True,
               title=f"beam search, beam size {beam_size}: the best {beam_size} "
                     "hypotheses live on (score = log p / length penalty)")
    legend = [Patch(label="kept (live hypothesis)", **_KEPT),
              Patch(label="returned", **_RETURNED),
              Patch(label="candidate, dropped", **_DROPPED)]
    figure.legend(handles=legend, loc="outside lower center", ncols=3, fontsize=8)
    figure.suptitle(f"decoding {' '.join(source)}: next word and summed log-probability")
    return figure


def _draw_tree(ax, tree: list[list[Candidate]], tgt_vocab: Vocab, steps: int, scored: bool,
               title: str) -> None:
    """Step t in column t, under it the candidates grouped by parent (in the parents'
    order, top down), most likely first; lines join each candidate to its parent."""
    positions = {(): (0, 0.0)}
    ax.text(0, 0.0, BOS, ha="center", va="center", fontsize=8,
            bbox={"boxstyle": "round", **_KEPT})
    height = max(len(candidates) for candidates in tree)
    for step, candidates in enumerate(tree, start=1):
        ordered = sorted(candidates, key=lambda c: (-positions[c.tokens[:-1]][1], -c.log_prob))
        for index, candidate in enumerate(ordered):
            y = (len(ordered) - 1) / 2 - index
            positions[candidate.tokens] = (step, y)
            parent_x, parent_y = positions[candidate.tokens[:-1]]
            chosen = candidate.kept or candidate.rank is not None
            ax.plot([parent_x, step], [parent_y, y], zorder=1, linewidth=1.8 if chosen else 0.7,
                    color=_KEPT["edgecolor"] if chosen else _DROPPED["edgecolor"])
            label = f"{tgt_vocab.tokens[candidate.tokens[-1]]}\n{candidate.log_prob:.2f}"
            style = _KEPT if candidate.kept else _DROPPED
            if candidate.rank is not None:
                style = _RETURNED
                label += (f"\n#{candidate.rank}, score {candidate.score:.2f}" if scored
                          else "\noutput")
            ax.text(step, y, label, ha="center", va="center", fontsize=7, zorder=2,
                    color="black" if chosen else "#737373",
                    bbox={"boxstyle": "round", **style})
    ax.set_xlim(-0.5, steps + 0.5)
    ax.set_ylim(-height / 2, height / 2)
    ax.set_xticks(range(steps + 1), ["start", *(f"step {s}" for s in range(1, steps + 1))],
                  fontsize=8)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(title, fontsize=9)


def least_certain_step(trace: SearchTrace) -> int:
    """The index of the step whose most likely next token was the least likely."""
    return int(np.argmin([step.log_probs[0].max() for step in trace.steps]))


def output_distribution_figure(step: DecodingStep, tgt_vocab: Vocab, step_number: int,
                               top_k: int = 10):
    """Bars of the `top_k` most likely next tokens of the step's first row: the final
    Linear's logits, and the probabilities the softmax makes of them."""
    logits = step.logits[0]
    probabilities = np.exp(step.log_probs[0])
    top = np.argsort(-logits, kind="stable")[:top_k]
    words = [tgt_vocab.tokens[token] for token in top]
    colors = [_KEPT["edgecolor"]] + ["#9ecae1"] * (len(top) - 1)  # the argmax, then the rest
    figure = new_figure(9, 0.32 * len(top) + 1.8)
    ax_logits, ax_probabilities = figure.subplots(1, 2, sharey=True)
    positions = np.arange(len(top))
    for ax, values, title, fmt in (
            (ax_logits, logits[top], "final Linear: logits", "%.2f"),
            (ax_probabilities, probabilities[top], "softmax: probabilities", "%.3g")):
        bars = ax.barh(positions, values, color=colors)
        ax.bar_label(bars, fmt=fmt, fontsize=7, padding=2)
        ax.set_title(title, fontsize=9)
        ax.axvline(0.0, color="black", linewidth=0.6)
    ax_logits.set_yticks(positions, words, fontsize=8)
    ax_logits.invert_yaxis()  # most likely on top
    ax_logits.margins(x=0.2)
    ax_probabilities.set_xlim(0.0, 1.15)
    prefix = " ".join(tgt_vocab.tokens[token] for token in step.prefixes[0])
    figure.suptitle(f"step {step_number}: {prefix} -> ?   (top {len(top)} of "
                    f"{len(tgt_vocab)} English tokens)")
    return figure
