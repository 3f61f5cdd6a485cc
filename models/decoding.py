"""Greedy decoding and beam search, batched, over a KV cache or by recomputing the prefix.

Both drive any model with `encode(src, src_pad_mask)`, `decode(tgt, memory, src_pad_mask,
cache=...)`, `new_cache()` and `pad_id` (the Transformer of this package). They run under
no_grad and leave train/eval mode alone: call `model.eval()` first so dropout is off.
Token bookkeeping is in NumPy; only the model's forward runs in minigrad.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import minigrad as mg

EXTRA_LENGTH = 50  # default max_len = src_len + EXTRA_LENGTH


class Hypothesis(NamedTuple):
    """One beam-search result: tokens after BOS (ending with EOS unless the search hit
    max_len), the length-penalized score and the plain sum of token log-probabilities."""

    tokens: list[int]
    score: float
    log_prob: float


def greedy_decode(model, src: mg.Tensor, bos_id: int, eos_id: int, max_len: int | None = None,
                  src_pad_mask: mg.Tensor | None = None,
                  use_cache: bool = True) -> tuple[mg.Tensor, mg.Tensor]:
    """Pick the most likely token at every step, for a batch of sources at once.

    src (batch, src_len) -> tokens (batch, steps) int64 without BOS, each row ending at its
    first EOS and padded with model.pad_id after it, and scores (batch,) float64, the sum of
    the chosen tokens' log-probabilities (EOS included). Stops when every row has emitted EOS
    or after max_len tokens (default src_len + 50)."""
    max_len = src.shape[1] + EXTRA_LENGTH if max_len is None else max_len
    with mg.no_grad():
        step = _NextToken(model, src, src_pad_mask, use_cache)
        batch = src.shape[0]
        prefixes = np.full((batch, 1), bos_id, dtype=np.int64)
        scores = np.zeros(batch)
        finished = np.zeros(batch, dtype=bool)
        for _ in range(max_len):
            log_probs = step.log_probs(prefixes)
            best = log_probs.argmax(-1)
            scores += np.where(finished, 0.0, log_probs[np.arange(batch), best])
            best = np.where(finished, model.pad_id, best)
            prefixes = np.concatenate([prefixes, best[:, None]], axis=1)
            finished |= best == eos_id
            if finished.all():
                break
    return mg.tensor(prefixes[:, 1:]), mg.tensor(scores, dtype=mg.float64)


def beam_search(model, src: mg.Tensor, bos_id: int, eos_id: int, beam_size: int = 4,
                top_beams: int = 1, alpha: float = 0.6, max_len: int | None = None,
                src_pad_mask: mg.Tensor | None = None,
                use_cache: bool = True) -> list[list[Hypothesis]]:
    """Beam search with the GNMT length penalty, for a batch of sources at once.

    src (batch, src_len) -> for every source its `top_beams` best hypotheses, best first,
    scored log_prob / lp with lp = ((5 + length) / 6) ** alpha (length counts EOS).

    K = beam_size hypotheses per source live in rows of a (batch * K) decoder batch. At the
    first step only beam 0 is live (the others start at -inf). Each step ranks the K * vocab
    extensions and keeps the top 2K: EOS candidates among the first K join a pool of at most
    K finished hypotheses, which are frozen and never extended, and the best K non-EOS
    candidates (there are at least K of 2K, as each beam has one EOS) become the live beams;
    every cache follows their back-pointers. A source is done when its pool is full and no
    live beam can beat the pool's worst score even at max_len (log-probs only fall and, for
    alpha >= 0, lp only grows). At max_len the live beams join the pool as they are.
    """
    if alpha < 0:
        raise ValueError(f"beam_search: alpha must be >= 0, got {alpha}")
    if not 1 <= top_beams <= beam_size:
        raise ValueError(
            f"beam_search: need 1 <= top_beams <= beam_size, got top_beams={top_beams}, "
            f"beam_size={beam_size}"
        )
    max_len = src.shape[1] + EXTRA_LENGTH if max_len is None else max_len
    with mg.no_grad():
        search = _BeamSearch(model, src, src_pad_mask, use_cache, bos_id, eos_id, beam_size,
                             alpha, max_len)
        return search.run(top_beams)


def _length_penalty(length, alpha: float):
    """GNMT: lp(length) = ((5 + length) / 6) ** alpha"""
    return ((5.0 + length) / 6.0) ** alpha


class _NextToken:
    """Log-probabilities (rows, vocab) of the next token for a batch of prefixes (rows, t),
    from a KV cache (feeding only the newest token) or by recomputing the whole prefix.
    `repeat` gives every source several rows (beams) before the first step."""

    def __init__(self, model, src: mg.Tensor, src_pad_mask, use_cache: bool, repeat: int = 1):
        self.model = model
        if src_pad_mask is None:
            src_pad_mask = src == model.pad_id
        self.memory = model.encode(src, src_pad_mask)
        self.src_pad_mask = src_pad_mask
        self.device = src.device
        if repeat > 1:
            rows = mg.tensor(np.repeat(np.arange(src.shape[0]), repeat), device=src.device)
            self.memory, self.src_pad_mask = self.memory[rows], src_pad_mask[rows]
        self.cache = model.new_cache() if use_cache else None

    def log_probs(self, prefixes: np.ndarray) -> np.ndarray:
        tokens = prefixes[:, -1:] if self.cache is not None else prefixes
        tokens = mg.tensor(tokens, device=self.device)
        logits = self.model.decode(tokens, self.memory, self.src_pad_mask, cache=self.cache)
        return logits[:, -1].log_softmax(-1).numpy().astype(np.float64)

    def reorder(self, index: np.ndarray) -> None:
        """Row r continues old row index[r]; every row of a source stays with its source,
        so the memory needs no reordering."""
        if self.cache is not None:
            self.cache.reorder(index)


class _BeamSearch:
    """The state of one batched beam search; arrays are indexed (source, beam, ...)."""

    def __init__(self, model, src, src_pad_mask, use_cache, bos_id, eos_id, beam_size,
                 alpha, max_len):
        self.step = _NextToken(model, src, src_pad_mask, use_cache, repeat=beam_size)
        self.eos_id, self.pad_id = eos_id, model.pad_id
        self.beam_size, self.alpha, self.max_len = beam_size, alpha, max_len
        batch = src.shape[0]
        self.prefixes = np.full((batch * beam_size, 1), bos_id, dtype=np.int64)
        self.live_log_probs = np.full((batch, beam_size), -np.inf)
        self.live_log_probs[:, 0] = 0.0  # only beam 0 is live at the first step
        # the finished pool, best first: scores, log-probs, tokens padded with pad_id
        self.pool_scores = np.full((batch, beam_size), -np.inf)
        self.pool_log_probs = np.full((batch, beam_size), -np.inf)
        self.pool_tokens = np.full((batch, beam_size, max_len), self.pad_id, dtype=np.int64)
        self.pool_lengths = np.zeros((batch, beam_size), dtype=np.int64)
        self.done = np.zeros(batch, dtype=bool)

    def run(self, top_beams: int) -> list[list[Hypothesis]]:
        for length in range(1, self.max_len + 1):
            self._advance(length)
            if self.done.all():
                break
        else:  # max_len reached: the live beams of unfinished sources join as they are
            self._add_to_pool(self.live_log_probs, self._live_tokens(), ~self.done[:, None])
        return self._results(top_beams)

    def _advance(self, length: int) -> None:
        """Extend every live beam by one token; `length` counts tokens after BOS."""
        batch, beams = self.live_log_probs.shape
        log_probs = self.step.log_probs(self.prefixes)
        vocab = log_probs.shape[-1]
        candidates = (self.live_log_probs[:, :, None]
                      + log_probs.reshape(batch, beams, vocab)).reshape(batch, -1)
        top = _top_k(candidates, min(2 * beams, beams * vocab))
        top_log_probs = np.take_along_axis(candidates, top, axis=1)
        beam, token = np.divmod(top, vocab)
        is_eos = token == self.eos_id

        finishing = is_eos[:, :beams] & ~self.done[:, None]
        finished_tokens = np.concatenate(
            [self._live_tokens()[np.arange(batch)[:, None], beam[:, :beams]],
             token[:, :beams, None]], axis=2)
        self._add_to_pool(top_log_probs[:, :beams], finished_tokens, finishing)

        # a stable sort on is_eos keeps the score order among the non-EOS candidates
        live = np.argsort(is_eos, axis=1, kind="stable")[:, :beams]
        self.live_log_probs = np.take_along_axis(top_log_probs, live, axis=1)
        back_pointers = (np.arange(batch)[:, None] * beams
                         + np.take_along_axis(beam, live, axis=1)).reshape(-1)
        self.prefixes = np.concatenate(
            [self.prefixes[back_pointers],
             np.take_along_axis(token, live, axis=1).reshape(-1, 1)], axis=1)
        self.step.reorder(back_pointers)

        best_reachable = self.live_log_probs.max(axis=1) / _length_penalty(self.max_len,
                                                                          self.alpha)
        self.done |= self.pool_scores[:, -1] >= best_reachable

    def _live_tokens(self) -> np.ndarray:
        """(batch, beams, length) tokens of the live beams, after BOS."""
        batch, beams = self.live_log_probs.shape
        return self.prefixes[:, 1:].reshape(batch, beams, -1)

    def _add_to_pool(self, log_probs: np.ndarray, tokens: np.ndarray,
                     accept: np.ndarray) -> None:
        """Merge candidates (batch, n) with `tokens` (batch, n, length) where `accept` and
        their log-prob is finite; keep the best K of pool and candidates by score."""
        accept = accept & np.isfinite(log_probs)
        length = tokens.shape[2]
        scores = np.where(accept, log_probs / _length_penalty(length, self.alpha), -np.inf)
        padded = np.full(tokens.shape[:2] + (self.max_len,), self.pad_id, dtype=np.int64)
        padded[:, :, :length] = tokens
        merged = {
            "scores": np.concatenate([self.pool_scores, scores], axis=1),
            "log_probs": np.concatenate([self.pool_log_probs, log_probs], axis=1),
            "tokens": np.concatenate([self.pool_tokens, padded], axis=1),
            "lengths": np.concatenate(
                [self.pool_lengths, np.full(scores.shape, length)], axis=1),
        }
        keep = _top_k(merged["scores"], self.beam_size)
        self.pool_scores = np.take_along_axis(merged["scores"], keep, axis=1)
        self.pool_log_probs = np.take_along_axis(merged["log_probs"], keep, axis=1)
        self.pool_tokens = np.take_along_axis(merged["tokens"], keep[:, :, None], axis=1)
        self.pool_lengths = np.take_along_axis(merged["lengths"], keep, axis=1)

    def _results(self, top_beams: int) -> list[list[Hypothesis]]:
        return [
            [Hypothesis(self.pool_tokens[b, k, :self.pool_lengths[b, k]].tolist(),
                        float(self.pool_scores[b, k]), float(self.pool_log_probs[b, k]))
             for k in range(top_beams) if np.isfinite(self.pool_scores[b, k])]
            for b in range(self.pool_scores.shape[0])
        ]


def _top_k(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries of each row, largest first (ties: lower index)."""
    if k < values.shape[1]:
        part = np.argpartition(-values, k - 1, axis=1)[:, :k]
    else:
        part = np.broadcast_to(np.arange(values.shape[1]), values.shape)
    order = np.lexsort((part, -np.take_along_axis(values, part, axis=1)), axis=1)
    return np.take_along_axis(part, order, axis=1)
