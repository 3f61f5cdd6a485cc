"""The toy translation data: dataset invariants, vocabularies and batches. (The grammar
that writes its sentences, and tokenisation: test_grammar.py.)"""

import itertools
import json
import random

import numpy as np
import pytest

from train.data import (
    MAX_LEN,
    SEED_PAIRS,
    batches,
    make_dataset,
    pad_sequences,
    sample_pair,
    tokenize_french,
)
from train.lexicon import FIXED_PHRASES
from train.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Vocab


@pytest.fixture(scope="module")
def data():
    return make_dataset()


def _all_pairs(data):
    return data.train + data.val + data.test


# ---------------------------------------------------------------- data set


def test_default_sizes(data):
    assert (len(data.train), len(data.val), len(data.test)) == (20_000, 500, 500)


def test_seed_pairs_and_fixed_phrases_are_in_train(data):
    train = {(tuple(src), tuple(tgt)) for src, tgt in data.train}
    for french, english in SEED_PAIRS:
        assert (tuple(tokenize_french(french)), tuple(english.split())) in train
    for french, english in FIXED_PHRASES.items():
        assert (french, english) in train


def test_splits_never_share_a_source(data):
    sources = [{tuple(src) for src, _ in split} for split in (data.train, data.val, data.test)]
    assert sum(len(s) for s in sources) == len(_all_pairs(data))  # no duplicate inside either
    assert not sources[0] & sources[1]
    assert not sources[0] & sources[2]
    assert not sources[1] & sources[2]


def test_one_target_per_source_across_a_large_sample():
    translations = {}
    rng = random.Random(123)
    for _ in range(50_000):
        src, tgt = sample_pair(rng)
        assert translations.setdefault(tuple(src), tgt) == tgt


def test_same_seed_same_data_and_other_seed_other_data():
    first = make_dataset(seed=7, n_train=300, n_val=50, n_test=50)
    again = make_dataset(seed=7, n_train=300, n_val=50, n_test=50)
    other = make_dataset(seed=8, n_train=300, n_val=50, n_test=50)
    assert (first.train, first.val, first.test) == (again.train, again.val, again.test)
    assert first.test != other.test


def test_too_few_training_pairs_is_an_error():
    with pytest.raises(ValueError):
        make_dataset(n_train=3)


def test_sentence_lengths(data):
    for src, tgt in _all_pairs(data):
        assert 1 <= len(src) <= MAX_LEN
        assert 1 <= len(tgt) <= MAX_LEN


def test_vocabulary_sizes(data):
    french_words = len(data.src_vocab) - len(SPECIALS)
    english_words = len(data.tgt_vocab) - len(SPECIALS)
    assert 140 <= french_words <= 170
    assert 80 <= english_words <= 105


def test_every_word_is_in_vocabulary_and_seen_in_training(data):
    for src, tgt in _all_pairs(data):
        assert not data.src_vocab.unknown_words(src)
        assert not data.tgt_vocab.unknown_words(tgt)
    train_french = {word for src, _ in data.train for word in src}
    train_english = {word for _, tgt in data.train for word in tgt}
    assert train_french == set(data.src_vocab.tokens[len(SPECIALS) :])
    assert train_english == set(data.tgt_vocab.tokens[len(SPECIALS) :])


def test_a_and_an_follow_the_next_english_word(data):
    for _, tgt in _all_pairs(data):
        for article, following in itertools.pairwise(tgt):
            if article == "a":
                assert following[0] not in "aeiou", tgt
            if article == "an":
                assert following[0] in "aeiou", tgt


def test_encode_uses_the_vocabularies(data):
    seed_pair = (["je", "suis", "étudiant"], ["i", "am", "a", "student"])
    ((src_ids, tgt_ids),) = data.encode([seed_pair])
    assert data.src_vocab.decode(src_ids) == ["je", "suis", "étudiant"]
    assert data.tgt_vocab.decode(tgt_ids) == ["i", "am", "a", "student"]


# ---------------------------------------------------------------- vocabulary


def test_vocab_special_ids_come_first():
    vocab = Vocab(["chat", "chien"])
    assert vocab.tokens[:4] == ["<pad>", "<s>", "</s>", "<unk>"]
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert len(vocab) == 6


def test_vocab_encode_decode_round_trip():
    vocab = Vocab(["chat", "chien", "le"])
    ids = vocab.encode(["le", "chien"])
    assert ids == [6, 5]
    assert vocab.decode([BOS_ID, *ids, EOS_ID, PAD_ID]) == ["le", "chien"]
    assert vocab.decode(np.array([BOS_ID, 4, PAD_ID, 5, EOS_ID, 6])) == ["chat", "chien"]
    assert vocab.encode(["loup"]) == [UNK_ID]


def test_vocab_unknown_words():
    vocab = Vocab(["chat", "chien"])
    assert vocab.unknown_words(["chat", "loup", "<s>", "loup", "renard"]) == [
        "loup",
        "<s>",
        "renard",
    ]
    assert vocab.unknown_words(["chien"]) == []


def test_vocab_dict_round_trip_through_json(data):
    restored = Vocab.from_dict(json.loads(json.dumps(data.src_vocab.to_dict())))
    assert restored == data.src_vocab
    assert restored.encode(["je", "suis"]) == data.src_vocab.encode(["je", "suis"])


@pytest.mark.parametrize("words", [["chat", "chat"], ["<unk>", "chat"]])
def test_vocab_rejects_duplicates_and_specials(words):
    with pytest.raises(ValueError):
        Vocab(words)


def test_vocab_from_dict_requires_specials_first():
    with pytest.raises(ValueError):
        Vocab.from_dict({"tokens": ["chat", "<pad>", "<s>", "</s>", "<unk>"]})


# ---------------------------------------------------------------- batches


def test_batches_pad_and_wrap_the_target():
    pairs = [([5, 6, 7], [4]), ([5], [4, 5, 6])]
    ((src, tgt),) = batches(pairs, batch_size=8)
    assert src.dtype == np.int64 and tgt.dtype == np.int64
    np.testing.assert_array_equal(src, [[5, 6, 7], [5, PAD_ID, PAD_ID]])
    np.testing.assert_array_equal(
        tgt, [[BOS_ID, 4, EOS_ID, PAD_ID, PAD_ID], [BOS_ID, 4, 5, 6, EOS_ID]]
    )


def test_shuffled_batches_cover_every_pair_once(data):
    pairs = data.encode(data.train[:130])
    seen = []
    sizes = []
    for src, tgt in batches(pairs, batch_size=32, rng=np.random.default_rng(0)):
        sizes.append(len(src))
        for src_row, tgt_row in zip(src, tgt, strict=True):
            seen.append((data.src_vocab.decode(src_row), data.tgt_vocab.decode(tgt_row)))
    assert sizes == [32, 32, 32, 32, 2]
    assert sorted(seen) == sorted(data.train[:130])


def test_unshuffled_batches_keep_the_order(data):
    pairs = data.encode(data.train[:10])
    src, _ = next(batches(pairs, batch_size=10))
    assert [data.src_vocab.decode(row) for row in src] == [s for s, _ in data.train[:10]]


def test_pad_sequences_of_nothing():
    assert pad_sequences([]).shape == (0, 0)
