"""Measuring a trained model: batched greedy translation, exact match and corpus BLEU,
and beam-search translations with their scores."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import minigrad as mg
from models import beam_search, greedy_decode
from train.data import pad_sequences
from train.vocab import BOS_ID, EOS_ID, Vocab

# a translation may be somewhat longer than its source (do-support adds "does not")
_EXTRA_TOKENS = 10


@dataclass
class TestScores:
    """Greedy translations of a test set and how they compare with the references."""

    exact_match: float  # fraction of sentences translated exactly
    bleu: float  # corpus BLEU (sacrebleu, 0-100)
    hypotheses: list[list[str]]


def max_source_words(model) -> int:
    """The longest source `model` can translate: a translation may run _EXTRA_TOKENS
    positions past it, and every position must be in the model's sinusoid table."""
    return model.positional.pe.shape[0] - _EXTRA_TOKENS


def greedy_translate(model, sources: Sequence[Sequence[int]], tgt_vocab: Vocab, device: str,
                     batch_size: int = 256) -> list[list[str]]:
    """Translate id sequences greedily, a batch of similar lengths at a time; results come
    back in the order of `sources`."""
    model.eval()
    order = sorted(range(len(sources)), key=lambda index: len(sources[index]))
    results: list[list[str]] = [[] for _ in sources]
    for start in range(0, len(order), batch_size):
        chosen = order[start : start + batch_size]
        src = pad_sequences([sources[index] for index in chosen])
        tokens, _ = greedy_decode(model, mg.tensor(src, device=device), BOS_ID, EOS_ID,
                                  max_len=src.shape[1] + _EXTRA_TOKENS)
        for index, row in zip(chosen, tokens.numpy(), strict=True):
            results[index] = tgt_vocab.decode(row)
    return results


def score_test_set(model, pairs: Sequence[tuple[list[str], list[str]]], src_vocab: Vocab,
                   tgt_vocab: Vocab, device: str) -> TestScores:
    """Greedy exact-match accuracy and corpus BLEU of token pairs (French, English)."""
    import sacrebleu

    hypotheses = greedy_translate(model, [src_vocab.encode(src) for src, _ in pairs],
                                  tgt_vocab, device)
    references = [tgt for _, tgt in pairs]
    exact = np.mean([hyp == ref for hyp, ref in zip(hypotheses, references, strict=True)])
    bleu = sacrebleu.corpus_bleu([" ".join(hyp) for hyp in hypotheses],
                                 [[" ".join(ref) for ref in references]])
    return TestScores(float(exact), float(bleu.score), hypotheses)


def beam_translations(model, sources: Sequence[Sequence[str]], src_vocab: Vocab,
                      tgt_vocab: Vocab, device: str, beam_size: int,
                      top_beams: int) -> list[list[tuple[str, float]]]:
    """The `top_beams` best (English text, score) of each tokenized French source."""
    model.eval()
    src = pad_sequences([src_vocab.encode(tokens) for tokens in sources])
    results = beam_search(model, mg.tensor(src, device=device), BOS_ID, EOS_ID,
                          beam_size=beam_size, top_beams=top_beams,
                          max_len=src.shape[1] + _EXTRA_TOKENS)
    return [[(" ".join(tgt_vocab.decode(hyp.tokens)), hyp.score) for hyp in hypotheses]
            for hypotheses in results]
