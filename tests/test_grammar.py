"""The toy translation grammar (train/grammar.py): noun phrases and clauses in French and
English, with agreement, word order and elision, invalid clauses refused; and the
tokenisation of French text, sampled pairs included."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from train.data import (
    MAX_LEN,
    join_french,
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
