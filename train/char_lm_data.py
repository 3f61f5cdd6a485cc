"""The text `python -m train.char_lm` learns: the help topics of Python's own documentation
(`pydoc_data.topics`, in every Python install: about 465,000 characters of English about
the language), read one character at a time.

Characters, not words: the alphabet is about a hundred symbols, so the output layer is
small and no text is ever out of vocabulary, and a model that spells, nests brackets and
indents code shows what it learned in a sampled line. The topics are joined in sorted
order and the character stream is cut in three, in order: the first 90 % to train on, the
next 5 % to validate each epoch, the last 5 % to test once at the end (contiguous parts,
as enwik8 and text8 are split: no window straddles two parts)."""

from dataclasses import dataclass

import numpy as np

VALIDATION_START = 0.90  # fractions of the text where each part begins
TEST_START = 0.95


@dataclass(frozen=True)
class Corpus:
    """The text's alphabet (its distinct characters, sorted: a character's id is its index)
    and the three parts as int64 ids."""

    alphabet: str
    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray


def corpus_text() -> str:
    """Every help topic of this Python's pydoc, in sorted order, one after another."""
    from pydoc_data.topics import topics

    return "\n".join(topics[name] for name in sorted(topics))


def load_corpus() -> Corpus:
    """The text, its alphabet and its three parts (see the module docstring)."""
    text = corpus_text()
    alphabet = "".join(sorted(set(text)))
    ids = encode(text, alphabet)
    validation_start = int(len(ids) * VALIDATION_START)
    test_start = int(len(ids) * TEST_START)
    return Corpus(alphabet, ids[:validation_start], ids[validation_start:test_start],
                  ids[test_start:])


def encode(text: str, alphabet: str) -> np.ndarray:
    """The ids of `text`'s characters; ValueError naming the first one not in `alphabet`."""
    index = {character: i for i, character in enumerate(alphabet)}
    try:
        return np.array([index[character] for character in text], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"the character {exc.args[0]!r} is not in the corpus's alphabet of "
                         f"{len(alphabet)} characters") from None


def decode(ids, alphabet: str) -> str:
    return "".join(alphabet[i] for i in ids)


def windows(ids: np.ndarray, seq_len: int) -> np.ndarray:
    """(count, seq_len + 1) windows of the text, one every seq_len characters: a window's
    first seq_len ids are the model's input, its last seq_len the targets (each input's
    next character), so every character but the first is a target exactly once."""
    count = (len(ids) - 1) // seq_len
    if count < 1:
        raise ValueError(f"a text of {len(ids)} characters has no window of "
                         f"{seq_len + 1} characters")
    starts = np.arange(count) * seq_len
    return ids[starts[:, None] + np.arange(seq_len + 1)]


def epoch_batches(train_windows: np.ndarray, batch_size: int, seed: int,
                  epoch: int) -> list[np.ndarray]:
    """The epoch's batches: the windows in an order seeded by (seed, epoch), so a resumed
    run draws the batches an unbroken one would, cut into batches of batch_size (the
    incomplete last batch is left out: every step weighs the same number of targets)."""
    order = np.random.default_rng([seed, epoch]).permutation(len(train_windows))
    steps = len(order) // batch_size
    return [train_windows[order[step * batch_size:(step + 1) * batch_size]]
            for step in range(steps)]


def unigram_perplexity(train_ids: np.ndarray, eval_ids: np.ndarray, vocab_size: int) -> float:
    """The perplexity of the best model that ignores context, the training text's character
    frequencies with add-one smoothing (so a character it never saw costs log(N + V), not
    infinity): p(c) = (count(c) + 1) / (N + V), perplexity = exp(-mean log p(eval char))."""
    counts = np.bincount(train_ids, minlength=vocab_size) + 1.0
    log_p = np.log(counts) - np.log(counts.sum())
    return float(np.exp(-log_p[eval_ids].mean()))
