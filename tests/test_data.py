"""The toy translation data: grammar rules, dataset invariants, vocabularies and batches."""

import itertools
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from train.data import (
    MAX_LEN,
    SEED_PAIRS,
    batches,
    join_french,
    make_dataset,
    pad_sequences,
    sample_pair,
    tokenize_french,
)
from train.grammar import (
    Clause,
    NounPhrase,
    elide,
    english_noun_phrase,
    french_noun_phrase,
    realize,
)
from train.lexicon import FIXED_PHRASES
from train.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Vocab


@pytest.fixture(scope="module")
def data():
    return make_dataset()


def _all_pairs(data):
    return data.train + data.val + data.test


# ---------------------------------------------------------------- grammar rules


@pytest.mark.parametrize(
    "phrase, french, english",
    [
        (NounPhrase("chien", after="noir"), "le chien noir", "the black dog"),
        (NounPhrase("maison", after="noir"), "la maison noire", "the black house"),
        (NounPhrase("chien", plural=True, after="noir"), "les chiens noirs", "the black dogs"),
        (NounPhrase("pomme", "un", True, after="noir"), "des pommes noires", "black apples"),
        (NounPhrase("maison", after="blanc"), "la maison blanche", "the white house"),
        (NounPhrase("éléphant", "un", after="noir"), "un éléphant noir", "a black elephant"),
        (NounPhrase("chien", "un", after="orange"), "un chien orange", "an orange dog"),
        (NounPhrase("chien", "un", True, after="orange"), "des chiens orange", "orange dogs"),
        (NounPhrase("orange", "un"), "une orange", "an orange"),
        (NounPhrase("orange", "un", after="rouge"), "une orange rouge", "a red orange"),
        (NounPhrase("pomme", "un"), "une pomme", "an apple"),
        (
            NounPhrase("chat", "un", after="intelligent"),
            "un chat intelligent",
            "an intelligent cat",
        ),
        (NounPhrase("chien", "un", before="grand"), "un grand chien", "a big dog"),
        (NounPhrase("chien", "un", True, before="petit"), "de petits chiens", "small dogs"),
        (NounPhrase("homme", "un", before="vieux"), "un vieil homme", "an old man"),
        (NounPhrase("arbre", plural=True, before="vieux"), "les vieux arbres", "the old trees"),
        (NounPhrase("femme", before="vieux"), "la vieille femme", "the old woman"),
        (NounPhrase("oiseau", "ce", before="beau"), "ce bel oiseau", "this beautiful bird"),
        (
            NounPhrase("pomme", "ce", True, before="beau"),
            "ces belles pommes",
            "these beautiful apples",
        ),
        (
            NounPhrase("arbre", "un", before="beau", after="blanc"),
            "un bel arbre blanc",
            "a beautiful white tree",
        ),
        (NounPhrase("oiseau"), "l'oiseau", "the bird"),
        (NounPhrase("homme"), "l'homme", "the man"),
        (NounPhrase("école"), "l'école", "the school"),
        (NounPhrase("éléphant", "ce"), "cet éléphant", "this elephant"),
        (NounPhrase("école", "mon"), "mon école", "my school"),
        (NounPhrase("maison", "mon"), "ma maison", "my house"),
        (NounPhrase("amie", "mon", True), "mes amies", "my friends"),
    ],
)
def test_noun_phrase_agreement_and_order(phrase, french, english):
    assert join_french(elide(french_noun_phrase(phrase))) == french
    assert " ".join(english_noun_phrase(phrase)) == english


@pytest.mark.parametrize(
    "clause, french, english",
    [
        (Clause("je", "être", complement="étudiant"), "je suis étudiant", "i am a student"),
        (Clause("elle", "être", complement="étudiant"), "elle est étudiante", "she is a student"),
        (
            Clause("nous", "être", complement="étudiant", feminine=True),
            "nous sommes étudiantes",
            "we are students",
        ),
        (
            Clause("vous", "être", complement="étudiant", singular_vous=True),
            "vous êtes étudiant",
            "you are a student",
        ),
        (
            Clause("vous", "être", complement="ingénieur"),
            "vous êtes ingénieurs",
            "you are engineers",
        ),
        (Clause("il", "être", complement="ingénieur"), "il est ingénieur", "he is an engineer"),
        (
            Clause("je", "être", complement="artiste", negated=True),
            "je ne suis pas artiste",
            "i am not an artist",
        ),
        (
            Clause("elle", "être", complement="heureux", negated=True),
            "elle n'est pas heureuse",
            "she is not happy",
        ),
        (
            Clause(NounPhrase("chien", plural=True), "être", complement="noir"),
            "les chiens sont noirs",
            "the dogs are black",
        ),
        (Clause("il", "manger"), "il mange", "he eats"),
        (Clause("ils", "manger"), "ils mangent", "they eat"),
        (Clause("nous", "manger"), "nous mangeons", "we eat"),
        (Clause("il", "manger", negated=True), "il ne mange pas", "he does not eat"),
        (Clause("je", "manger", negated=True), "je ne mange pas", "i do not eat"),
        (Clause("elles", "lire", negated=True), "elles ne lisent pas", "they do not read"),
        (
            Clause("je", "aimer", objects=(NounPhrase("oiseau"),)),
            "j'aime l'oiseau",
            "i like the bird",
        ),
        (
            Clause("je", "aimer", objects=(NounPhrase("oiseau"),), negated=True),
            "je n'aime pas l'oiseau",
            "i do not like the bird",
        ),
        (
            Clause("il", "avoir", objects=(NounPhrase("orange", "un"),), negated=True),
            "il n'a pas d'orange",
            "he does not have an orange",
        ),
        (
            Clause("je", "manger", objects=(NounPhrase("pomme", "un", True),), negated=True),
            "je ne mange pas de pommes",
            "i do not eat apples",
        ),
        (
            Clause("il", "écouter", objects=(NounPhrase("oiseau", plural=True),)),
            "il écoute les oiseaux",
            "he listens to the birds",
        ),
        (
            Clause("je", "écouter", objects=(NounPhrase("chat"),), negated=True),
            "je n'écoute pas le chat",
            "i do not listen to the cat",
        ),
        (
            Clause("je", "manger", objects=(NounPhrase("pomme", "un"), NounPhrase("orange", "un"))),
            "je mange une pomme et une orange",
            "i eat an apple and an orange",
        ),
        (
            Clause("elles", "dormir", place=("sous", NounPhrase("arbre"))),
            "elles dorment sous l'arbre",
            "they sleep under the tree",
        ),
        (
            Clause(
                NounPhrase("homme", "un", before="vieux"),
                "voir",
                objects=(NounPhrase("éléphant", "un", after="noir"),),
                place=("derrière", NounPhrase("maison", "mon")),
            ),
            "un vieil homme voit un éléphant noir derrière ma maison",
            "an old man sees a black elephant behind my house",
        ),
    ],
)
def test_clause_translation(clause, french, english):
    src, tgt = realize(clause)
    assert join_french(src) == french
    assert " ".join(tgt) == english


@pytest.mark.parametrize(
    "clause",
    [
        Clause("je", "aimer"),  # aimer needs an object
        Clause("je", "dormir", objects=(NounPhrase("chat"),)),
        Clause("je", "être"),  # être needs a complement
        Clause("je", "manger", complement="rouge"),
        Clause("je", "manger", objects=(NounPhrase("pomme"),) * 2, negated=True),
        Clause("tu", "manger"),
        Clause("je", "manger", objects=(NounPhrase("pomme", before="noir"),)),
        Clause("je", "dormir", place=("chez", NounPhrase("chat"))),
    ],
)
def test_invalid_clauses_are_rejected(clause):
    with pytest.raises(ValueError):
        realize(clause)


# ---------------------------------------------------------------- tokenisation


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("Je suis étudiant.", ["je", "suis", "étudiant"]),
        ("  MERCI !! ", ["merci"]),
        ("J’aime l'oiseau, non ?", ["j'", "aime", "l'", "oiseau", "non"]),
        ("S'il vous plaît", ["s'", "il", "vous", "plaît"]),
        ("Il n'a pas d'orange", ["il", "n'", "a", "pas", "d'", "orange"]),
        ("e\u0301le\u0301phant", ["éléphant"]),  # decomposed accents, as some keyboards send
        ("l' oiseau", ["l'", "oiseau"]),
        ("", []),
    ],
)
def test_tokenize_french_user_text(text, tokens):
    assert tokenize_french(text) == tokens


def test_join_french_glues_elisions():
    assert join_french(["j'", "aime", "l'", "oiseau"]) == "j'aime l'oiseau"


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_sampled_pairs_tokenize_back_and_fit(seed):
    src, tgt = sample_pair(random.Random(seed))
    assert tokenize_french(join_french(src)) == src
    assert 1 <= len(src) <= MAX_LEN and 1 <= len(tgt) <= MAX_LEN
    assert sample_pair(random.Random(seed)) == (src, tgt)


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
