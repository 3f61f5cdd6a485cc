"""The toy French->English data set: random sentences, disjoint splits, vocabularies, batches.

`make_dataset` samples structured clauses from `train.grammar`, keeps one pair per French
sentence, and splits them so that no French sentence is in two splits. Test sentences are
new combinations of the constructions and words seen in training.
"""

import random
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from train.grammar import Clause, NounPhrase, english_words, french_words, realize
from train.lexicon import (
    ADJECTIVES,
    FIXED_PHRASES,
    NOUNS,
    PREPOSITIONS,
    PROFESSIONS,
    PRONOUNS,
    VERBS,
)
from train.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

Pair = tuple[list[str], list[str]]

MAX_LEN = 12
# the Illustrated Transformer's examples; make_dataset always puts them in train
SEED_PAIRS = (("je suis étudiant", "i am a student"), ("merci", "thanks"))

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'"})
_FRENCH_TOKEN = re.compile(r"[^\W_]+'?")  # a word, with the apostrophe of an elision

_ACTION_VERBS = [verb for verb, entry in VERBS.items() if entry.objects != "none"]
_ACTORS = [noun for noun, entry in NOUNS.items() if entry.kind != "thing"]
_PEOPLE = [noun for noun, entry in NOUNS.items() if entry.kind == "person"]
_BEFORE = [adj for adj, entry in ADJECTIVES.items() if entry.before_noun]
_AFTER = [adj for adj, entry in ADJECTIVES.items() if not entry.before_noun]
_DETERMINERS, _DETERMINER_WEIGHTS = ("le", "un", "mon", "ce"), (4, 3, 1, 1)
_CLAUSE_KINDS, _CLAUSE_WEIGHTS = ("action", "sleep", "profession", "description"), (6, 1, 1, 2)


def tokenize_french(text: str) -> list[str]:
    """Split French text the way the data set does: lowercase, punctuation dropped.

    An elided word keeps its apostrophe and stands alone, whichever apostrophe was typed:
    "J’aime l'oiseau." -> ["j'", "aime", "l'", "oiseau"].
    """
    text = unicodedata.normalize("NFC", text).translate(_APOSTROPHES).lower()
    return _FRENCH_TOKEN.findall(text)


def join_french(tokens: Sequence[str]) -> str:
    """Write French tokens as text, gluing elisions to the next word: "j'aime l'oiseau"."""
    text = ""
    for token in tokens:
        text += token if not text or text.endswith("'") else " " + token
    return text


def sample_clause(rng: random.Random) -> Clause:
    """Draw one clause: an action, sleeping, a profession ("je suis étudiant") or a description."""
    kind = rng.choices(_CLAUSE_KINDS, weights=_CLAUSE_WEIGHTS)[0]
    negated = rng.random() < 0.3
    common = {
        "negated": negated,
        "feminine": rng.random() < 0.5,
        "singular_vous": rng.random() < 0.5,
    }
    if kind == "profession":
        subject = _sample_subject(rng, _PEOPLE)
        return Clause(subject, "être", complement=rng.choice(list(PROFESSIONS)), **common)
    if kind == "description":
        subject = _sample_subject(rng, list(NOUNS))
        return Clause(subject, "être", complement=rng.choice(list(ADJECTIVES)), **common)
    place = _sample_place(rng) if rng.random() < (0.6 if kind == "sleep" else 0.2) else None
    if kind == "sleep":
        return Clause(_sample_subject(rng, _ACTORS), "dormir", place=place, **common)
    verb = rng.choice(_ACTION_VERBS)
    count = 2 if not negated and rng.random() < 0.1 else 1
    if VERBS[verb].objects == "optional" and rng.random() < 0.2:
        count = 0
    objects = tuple(_sample_noun_phrase(rng, list(NOUNS)) for _ in range(count))
    subject = _sample_subject(rng, _ACTORS)
    return Clause(subject, verb, objects=objects, place=place, **common)


def sample_pair(rng: random.Random, max_len: int = MAX_LEN) -> Pair:
    """Draw clauses until one translates into at most `max_len` tokens on both sides."""
    while True:
        french, english = realize(sample_clause(rng))
        if len(french) <= max_len and len(english) <= max_len:
            return french, english


@dataclass
class ToyTranslationData:
    """Token pairs (French, English) for each split, and the vocabularies of the grammar."""

    train: list[Pair]
    val: list[Pair]
    test: list[Pair]
    src_vocab: Vocab
    tgt_vocab: Vocab

    def encode(self, pairs: Sequence[Pair]) -> list[tuple[list[int], list[int]]]:
        """Token pairs as id pairs, without special tokens (`batches` adds them)."""
        return [(self.src_vocab.encode(src), self.tgt_vocab.encode(tgt)) for src, tgt in pairs]


def make_vocabularies() -> tuple[Vocab, Vocab]:
    """French and English vocabularies of every word the grammar can produce, sorted."""
    return Vocab(sorted(french_words())), Vocab(sorted(english_words()))


def make_dataset(
    seed: int = 0,
    n_train: int = 20_000,
    n_val: int = 500,
    n_test: int = 500,
    max_len: int = MAX_LEN,
) -> ToyTranslationData:
    """Sample distinct sentence pairs and split them; the same seed gives the same data.

    Train holds the fixed phrases (merci, bonjour...) and the seed pairs, plus sampled
    sentences; validation and test hold only sampled ones. No French sentence is in two
    splits, and none has two translations.
    """
    translations: dict[tuple[str, ...], tuple[str, ...]] = {}
    required = [pair for pair in _always_in_train() if _add(translations, pair)]
    n_sampled = n_train - len(required) + n_val + n_test
    if n_sampled < n_val + n_test:
        raise ValueError(f"n_train must be at least {len(required)}, the fixed pairs")
    rng = random.Random(seed)
    sampled: list[Pair] = []
    draws_left = 50 * n_sampled  # the grammar has far more sentences; this only stops a typo
    while len(sampled) < n_sampled:
        if draws_left == 0:
            raise ValueError(f"could not draw {n_sampled} distinct sentences of <= {max_len} words")
        draws_left -= 1
        pair = sample_pair(rng, max_len)
        if _add(translations, pair):
            sampled.append(pair)
    rng.shuffle(sampled)  # so the splits share one distribution
    val, test = sampled[:n_val], sampled[n_val : n_val + n_test]
    train = required + sampled[n_val + n_test :]
    src_vocab, tgt_vocab = make_vocabularies()
    return ToyTranslationData(train, val, test, src_vocab, tgt_vocab)


def _always_in_train() -> list[Pair]:
    """The fixed phrases and the seed pairs: every training set holds them."""
    pairs = [(list(fr), list(en)) for fr, en in FIXED_PHRASES.items()]
    return pairs + [(tokenize_french(fr), en.split()) for fr, en in SEED_PAIRS]


# the fewest training pairs make_dataset can make: the distinct fixed pairs
MIN_TRAIN_SIZE = len({tuple(fr) for fr, _ in _always_in_train()})
# drawing a million distinct sentences takes about a minute: more is not a toy run
MAX_TRAIN_SIZE = 1_000_000


def batches(
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
    batch_size: int,
    rng: np.random.Generator | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (src, tgt) int64 arrays of shape (batch, longest in batch), padded with <pad>.

    `pairs` are id pairs from `ToyTranslationData.encode`. The source is kept as is; the
    target is wrapped as <s> ... </s>, so the decoder reads tgt[:, :-1] and predicts
    tgt[:, 1:]. `rng` shuffles the order; None keeps it. The last batch may be smaller.
    """
    order = rng.permutation(len(pairs)) if rng is not None else range(len(pairs))
    for start in range(0, len(pairs), batch_size):
        chosen = [pairs[index] for index in order[start : start + batch_size]]
        sources = [list(src) for src, _ in chosen]
        targets = [[BOS_ID, *tgt, EOS_ID] for _, tgt in chosen]
        yield pad_sequences(sources), pad_sequences(targets)


def pad_sequences(sequences: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> np.ndarray:
    """Stack id lists into an int64 array, padding each on the right to the longest."""
    longest = max((len(sequence) for sequence in sequences), default=0)
    out = np.full((len(sequences), longest), pad_id, dtype=np.int64)
    for row, sequence in enumerate(sequences):
        out[row, : len(sequence)] = sequence
    return out


def _sample_subject(rng: random.Random, nouns: list[str]) -> str | NounPhrase:
    """A pronoun half of the time, else a noun phrase about one of `nouns`."""
    if rng.random() < 0.5:
        return rng.choice(list(PRONOUNS))
    return _sample_noun_phrase(rng, nouns)


def _sample_noun_phrase(rng: random.Random, nouns: list[str]) -> NounPhrase:
    return NounPhrase(
        noun=rng.choice(nouns),
        det=rng.choices(_DETERMINERS, weights=_DETERMINER_WEIGHTS)[0],
        plural=rng.random() < 0.35,
        before=rng.choice(_BEFORE) if rng.random() < 0.2 else None,
        after=rng.choice(_AFTER) if rng.random() < 0.3 else None,
    )


def _sample_place(rng: random.Random) -> tuple[str, NounPhrase]:
    return rng.choice(list(PREPOSITIONS)), _sample_noun_phrase(rng, list(NOUNS))


def _add(translations: dict[tuple[str, ...], tuple[str, ...]], pair: Pair) -> bool:
    """Record a pair; False if its source is known. A second translation is a grammar bug."""
    source, target = tuple(pair[0]), tuple(pair[1])
    if source not in translations:
        translations[source] = target
        return True
    if translations[source] != target:
        raise AssertionError(f"{source} translates as both {translations[source]} and {target}")
    return False
