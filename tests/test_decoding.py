"""Greedy decoding and beam search (models/decoding.py): the KV cache against recomputing
the prefix, beam search against greedy and against exhaustive search, and the rules of
the finished pool. On MINIGRAD_TEST_DEVICE (see conftest.py)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import test_device

import minigrad as mg
from models import DecoderCache, Transformer, beam_search, greedy_decode

pytestmark = pytest.mark.device
DEVICE = test_device()
PAD, BOS, EOS = 0, 1, 2


def trained_free_model(seed: int = 0) -> Transformer:
    """A random float64 model: its outputs are arbitrary but deterministic."""
    mg.manual_seed(seed)
    return Transformer(11, 9, d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                       dim_feedforward=32, dropout=0.0,
                       pad_id=PAD).to(mg.float64).to(DEVICE).eval()


def ids(rows) -> mg.Tensor:
    return mg.tensor(rows, device=DEVICE)


def source() -> mg.Tensor:
    return ids([[3, 4, 5, 6], [7, 8, PAD, PAD], [9, 10, 3, PAD]])


class MarkovModel:
    """A stand-in for the Transformer whose next-token log-probabilities depend only on the
    source's first token and the last target token: log_probs[source, last, next].
    It records every prefix it is asked to extend."""

    pad_id = PAD

    def __init__(self, log_probs: np.ndarray):
        self.table = log_probs
        self.fed: list[np.ndarray] = []

    def encode(self, src, src_pad_mask=None):
        return mg.tensor(src.numpy()[:, 0], device=src.device)

    def decode(self, tgt, memory, src_pad_mask, tgt_pad_mask=None, cache=None):
        self.fed.append(tgt.numpy())
        return mg.tensor(self.table[memory.numpy()[:, None], tgt.numpy()], device=tgt.device)

    def new_cache(self):
        return DecoderCache(0)


def markov_model(sources: int, vocab: int, eos_bias: float, seed: int) -> MarkovModel:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(sources, vocab, vocab))
    logits[..., EOS] += eos_bias
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return MarkovModel(log_probs)


def exhaustive_best(model: MarkovModel, source: int, vocab: int, max_len: int,
                    alpha: float) -> list[tuple[float, list[int]]]:
    """Every sequence that ends at its first EOS or at max_len, by GNMT score."""
    table = model.table[source]
    scored = []
    for length in range(1, max_len + 1):
        for body in itertools.product([t for t in range(vocab) if t != EOS], repeat=length - 1):
            for last in range(vocab):
                if last != EOS and length < max_len:
                    continue
                sequence = [BOS, *body, last]
                log_prob = sum(table[a, b] for a, b in itertools.pairwise(sequence))
                scored.append((log_prob / ((5 + length) / 6) ** alpha, sequence[1:]))
    return sorted(scored, key=lambda pair: -pair[0])


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_stops_each_row_at_eos(use_cache):
    model = markov_model(sources=3, vocab=5, eos_bias=1.0, seed=1)
    src = ids([[0], [1], [2]])
    result, scores = greedy_decode(model, src, BOS, EOS, max_len=12, use_cache=use_cache)
    for row, score, source in zip(result.tolist(), scores.tolist(), range(3), strict=True):
        prefix, current, expected = [], BOS, 0.0
        for _ in range(12):  # greedy by hand on the Markov table
            current = int(np.argmax(model.table[source, current]))
            expected += model.table[source, BOS if not prefix else prefix[-1], current]
            prefix.append(current)
            if current == EOS:
                break
        assert row[:len(prefix)] == prefix
        assert all(t == PAD for t in row[len(prefix):])
        assert score == pytest.approx(expected)


def test_greedy_cache_matches_full_prefix():
    model = trained_free_model()
    cached, cached_scores = greedy_decode(model, source(), BOS, EOS, max_len=8)
    full, full_scores = greedy_decode(model, source(), BOS, EOS, max_len=8, use_cache=False)
    np.testing.assert_array_equal(cached.numpy(), full.numpy())
    np.testing.assert_allclose(cached_scores.numpy(), full_scores.numpy(), atol=1e-5)


def test_beam_cache_matches_full_prefix():
    model = trained_free_model(seed=1)
    cached = beam_search(model, source(), BOS, EOS, beam_size=3, top_beams=3, max_len=7)
    full = beam_search(model, source(), BOS, EOS, beam_size=3, top_beams=3, max_len=7,
                       use_cache=False)
    for cached_hyps, full_hyps in zip(cached, full, strict=True):
        assert [h.tokens for h in cached_hyps] == [h.tokens for h in full_hyps]
        np.testing.assert_allclose([h.score for h in cached_hyps],
                                   [h.score for h in full_hyps], atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_size_one_is_greedy(seed):
    model = trained_free_model(seed)
    tokens, scores = greedy_decode(model, source(), BOS, EOS, max_len=9)
    beams = beam_search(model, source(), BOS, EOS, beam_size=1, alpha=0.0, max_len=9)
    for row, score, (best,) in zip(tokens.tolist(), scores.tolist(), beams, strict=True):
        length = row.index(EOS) + 1 if EOS in row else len(row)
        assert best.tokens == row[:length]
        assert best.log_prob == pytest.approx(score, abs=1e-9)


def test_top_beams_are_sorted_distinct_and_scored():
    model = trained_free_model(seed=2)
    alpha = 0.6
    for hypotheses in beam_search(model, source(), BOS, EOS, beam_size=5, top_beams=4,
                                  alpha=alpha, max_len=6):
        assert len(hypotheses) == 4
        scores = [h.score for h in hypotheses]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in hypotheses}) == 4
        for h in hypotheses:
            assert EOS not in h.tokens[:-1]
            assert h.score == pytest.approx(h.log_prob / ((5 + len(h.tokens)) / 6) ** alpha)


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
def test_wide_beam_is_exhaustive(alpha):
    """With room for every prefix the search is exact: its top beams are the best of all
    sequences up to max_len (ended at EOS or cut at max_len), in order."""
    vocab, max_len = 4, 4
    model = markov_model(sources=2, vocab=vocab, eos_bias=0.0, seed=3)
    width = (vocab - 1) ** (max_len - 1) * vocab  # every candidate of the last step
    results = beam_search(model, ids([[0], [1]]), BOS, EOS, beam_size=width,
                          top_beams=10, alpha=alpha, max_len=max_len)
    for source, hypotheses in enumerate(results):
        best = exhaustive_best(model, source, vocab, max_len, alpha)[:10]
        assert [h.tokens for h in hypotheses] == [tokens for _, tokens in best]
        np.testing.assert_allclose([h.score for h in hypotheses], [s for s, _ in best])


def test_finished_hypotheses_are_never_extended_and_search_stops_early():
    """No prefix fed to the model contains EOS, and with EOS likely the search stops long
    before max_len once no live beam can beat the worst finished one."""
    model = markov_model(sources=2, vocab=6, eos_bias=3.0, seed=4)
    results = beam_search(model, ids([[0], [1]]), BOS, EOS, beam_size=4, top_beams=4,
                          alpha=0.6, max_len=30, use_cache=False)
    assert all(EOS not in prefix for prefix in model.fed)
    assert len(model.fed) < 30
    for hypotheses in results:
        assert all(h.tokens[-1] == EOS for h in hypotheses)


def test_beam_search_arguments_are_checked():
    model = markov_model(sources=1, vocab=4, eos_bias=0.0, seed=0)
    with pytest.raises(ValueError, match="top_beams"):
        beam_search(model, ids([[0]]), BOS, EOS, beam_size=2, top_beams=3)
    with pytest.raises(ValueError, match="alpha"):
        beam_search(model, ids([[0]]), BOS, EOS, alpha=-1.0)


def test_stopping_rule_waits_for_beams_that_can_still_win():
    """With a strong length reward (alpha 1.5) a live beam can overtake finished ones by
    growing longer: the search must bound it with lp(max_len), not lp(current length).
    On this instance (found by search; a bound with lp(current length) stops too early
    and misses the best hypothesis) beam_size 3 finds the exhaustive top 2."""
    model = markov_model(sources=2, vocab=4, eos_bias=2.0, seed=9)
    results = beam_search(model, ids([[0], [1]]), BOS, EOS, beam_size=3, top_beams=2,
                          alpha=1.5, max_len=6)
    for source, hypotheses in enumerate(results):
        best = exhaustive_best(model, source, 4, 6, 1.5)[:2]
        assert [h.tokens for h in hypotheses] == [tokens for _, tokens in best]
