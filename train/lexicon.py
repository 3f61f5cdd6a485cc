"""The toy French->English lexicon: every word the grammar knows, with its forms.

About 150 French and 90 English tokens. French words carry their gender and agreement
forms, verbs their present tense; `train.grammar` combines them into sentences.
"""

from typing import NamedTuple


class Noun(NamedTuple):
    """A French noun of one gender, its English translation, and what it can do."""

    gender: str  # "m" or "f"
    french: tuple[str, str]  # singular, plural
    english: tuple[str, str]
    kind: str  # "person", "animal" or "thing": the sampler lets only the first two act


class Adjective(NamedTuple):
    """French forms (m sg, f sg, m pl, f pl), English word, and position in French."""

    french: tuple[str, str, str, str]
    english: str
    before_noun: bool = False
    before_vowel: str | None = None  # masculine singular before a vowel: bel, vieil


class Profession(NamedTuple):
    """A predicate noun ("je suis étudiant"): French forms as for adjectives, English sg/pl."""

    french: tuple[str, str, str, str]
    english: tuple[str, str]


class Verb(NamedTuple):
    """French present (je, tu, il, nous, vous, ils), English base and third-person forms."""

    french: tuple[str, str, str, str, str, str]
    english: tuple[str, str]
    objects: str = "required"  # "required", "optional" or "none"


class Pronoun(NamedTuple):
    """A subject pronoun: English word, conjugation row, and what it fixes for agreement."""

    english: str
    person: int  # index into Verb.french
    gender: str | None  # None: the speaker's or listener's, see Clause.feminine
    plural: bool | None  # None: "vous" may address one person, see Clause.singular_vous


class Determiner(NamedTuple):
    """French (m sg, f sg, pl) and English (sg, pl); an empty English word is dropped."""

    french: tuple[str, str, str]
    english: tuple[str, str]


def _er(stem: str) -> tuple[str, str, str, str, str, str]:
    """Conjugate a regular -er verb: "aim" -> aime, aimes, aime, aimons, aimez, aiment."""
    return (stem + "e", stem + "es", stem + "e", stem + "ons", stem + "ez", stem + "ent")


def _regular(masculine: str) -> tuple[str, str, str, str]:
    """Adjective forms with regular -e/-s endings; an -e word keeps one singular form."""
    feminine = masculine if masculine.endswith("e") else masculine + "e"
    return (masculine, feminine, masculine + "s", feminine + "s")


# no "tu": "vous" already gives "you", and tu would add six French words
PRONOUNS = {
    "je": Pronoun("i", 0, None, False),
    "il": Pronoun("he", 2, "m", False),
    "elle": Pronoun("she", 2, "f", False),
    "nous": Pronoun("we", 3, None, True),
    "vous": Pronoun("you", 4, None, None),
    "ils": Pronoun("they", 5, "m", True),
    "elles": Pronoun("they", 5, "f", True),
}

DETERMINERS = {
    "le": Determiner(("le", "la", "les"), ("the", "the")),
    "un": Determiner(("un", "une", "des"), ("a", "")),
    "mon": Determiner(("mon", "ma", "mes"), ("my", "my")),
    "ce": Determiner(("ce", "cette", "ces"), ("this", "these")),
}

NOUNS = {
    "chien": Noun("m", ("chien", "chiens"), ("dog", "dogs"), "animal"),
    "chat": Noun("m", ("chat", "chats"), ("cat", "cats"), "animal"),
    "oiseau": Noun("m", ("oiseau", "oiseaux"), ("bird", "birds"), "animal"),
    "éléphant": Noun("m", ("éléphant", "éléphants"), ("elephant", "elephants"), "animal"),
    "homme": Noun("m", ("homme", "hommes"), ("man", "men"), "person"),
    "femme": Noun("f", ("femme", "femmes"), ("woman", "women"), "person"),
    "ami": Noun("m", ("ami", "amis"), ("friend", "friends"), "person"),
    "amie": Noun("f", ("amie", "amies"), ("friend", "friends"), "person"),
    "pomme": Noun("f", ("pomme", "pommes"), ("apple", "apples"), "thing"),
    "orange": Noun("f", ("orange", "oranges"), ("orange", "oranges"), "thing"),
    "livre": Noun("m", ("livre", "livres"), ("book", "books"), "thing"),
    "table": Noun("f", ("table", "tables"), ("table", "tables"), "thing"),
    "maison": Noun("f", ("maison", "maisons"), ("house", "houses"), "thing"),
    "arbre": Noun("m", ("arbre", "arbres"), ("tree", "trees"), "thing"),
    "école": Noun("f", ("école", "écoles"), ("school", "schools"), "thing"),
    "parapluie": Noun("m", ("parapluie", "parapluies"), ("umbrella", "umbrellas"), "thing"),
}

ADJECTIVES = {
    "grand": Adjective(_regular("grand"), "big", before_noun=True),
    "petit": Adjective(_regular("petit"), "small", before_noun=True),
    "vieux": Adjective(("vieux", "vieille", "vieux", "vieilles"), "old", True, "vieil"),
    "beau": Adjective(("beau", "belle", "beaux", "belles"), "beautiful", True, "bel"),
    "noir": Adjective(_regular("noir"), "black"),
    "blanc": Adjective(("blanc", "blanche", "blancs", "blanches"), "white"),
    "rouge": Adjective(_regular("rouge"), "red"),
    "orange": Adjective(("orange",) * 4, "orange"),  # colour named after a fruit: invariable
    "intelligent": Adjective(_regular("intelligent"), "intelligent"),
    "heureux": Adjective(("heureux", "heureuse", "heureux", "heureuses"), "happy"),
}

PROFESSIONS = {
    "étudiant": Profession(_regular("étudiant"), ("student", "students")),
    "médecin": Profession(("médecin", "médecin", "médecins", "médecins"), ("doctor", "doctors")),
    "ingénieur": Profession(
        ("ingénieur", "ingénieur", "ingénieurs", "ingénieurs"), ("engineer", "engineers")
    ),
    "artiste": Profession(_regular("artiste"), ("artist", "artists")),
}

VERBS = {
    # English "are"/"is"; the grammar says "am" after "i"
    "être": Verb(("suis", "es", "est", "sommes", "êtes", "sont"), ("are", "is"), "none"),
    "avoir": Verb(("ai", "as", "a", "avons", "avez", "ont"), ("have", "has")),
    "manger": Verb(
        ("mange", "manges", "mange", "mangeons", "mangez", "mangent"), ("eat", "eats"), "optional"
    ),
    "aimer": Verb(_er("aim"), ("like", "likes")),
    "écouter": Verb(_er("écout"), ("listen to", "listens to")),
    "voir": Verb(("vois", "vois", "voit", "voyons", "voyez", "voient"), ("see", "sees")),
    "vouloir": Verb(("veux", "veux", "veut", "voulons", "voulez", "veulent"), ("want", "wants")),
    "lire": Verb(("lis", "lis", "lit", "lisons", "lisez", "lisent"), ("read", "reads"), "optional"),
    "dormir": Verb(
        ("dors", "dors", "dort", "dormons", "dormez", "dorment"), ("sleep", "sleeps"), "none"
    ),
}

PREPOSITIONS = {"sur": "on", "sous": "under", "dans": "in", "avec": "with", "derrière": "behind"}

FIXED_PHRASES = {
    ("merci",): ("thanks",),
    ("bonjour",): ("hello",),
    ("au", "revoir"): ("goodbye",),
    ("oui",): ("yes",),
    ("non",): ("no",),
    ("s'", "il", "vous", "plaît"): ("please",),
}
