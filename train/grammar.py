"""The toy French->English grammar: the rules that translate a structured clause.

A `Clause` is a structured choice (subject, verb, negation, objects, place). `realize`
turns it into a (French tokens, English tokens) pair deterministically, so each French
sentence has exactly one English translation. The rules are the ones that make attention
necessary: adjectives move around the noun, French agreement collapses in English, a/an
depends on the next English word, English adds third-person -s and do-support, and French
elides. Elided forms are tokens of their own: "j'", "l'", "n'", "d'", "s'".
"""

from dataclasses import dataclass

from train.lexicon import (
    ADJECTIVES,
    DETERMINERS,
    FIXED_PHRASES,
    NOUNS,
    PREPOSITIONS,
    PROFESSIONS,
    PRONOUNS,
    VERBS,
)

_FRENCH_VOWELS = "aeiouyàâéèêëîïôûù"
_MUTE_H = {"homme", "hommes"}
# function words whose form depends on whether the next word starts with a vowel sound
_BEFORE_VOWEL = {
    "je": "j'",
    "ne": "n'",
    "le": "l'",
    "la": "l'",
    "de": "d'",
    "ce": "cet",
    "ma": "mon",
}


@dataclass(frozen=True)
class NounPhrase:
    """A determiner, a noun and at most one adjective on each side of the noun.

    `noun` is a key of NOUNS and `det` of DETERMINERS. `before` is a key of ADJECTIVES that
    French puts before the noun (grand, vieux...), `after` one that follows it (noir...);
    English puts both before the noun, `before` first.
    """

    noun: str
    det: str = "le"
    plural: bool = False
    before: str | None = None
    after: str | None = None


@dataclass(frozen=True)
class Clause:
    """One sentence as a structured choice, which `realize` translates.

    subject: a key of PRONOUNS or a NounPhrase.
    verb: a key of VERBS. "être" takes a `complement` (a key of PROFESSIONS or ADJECTIVES)
    and no objects; other verbs take up to two `objects`, joined by et/and when affirmative.
    place: (a key of PREPOSITIONS, NounPhrase), or None.
    feminine: the gender of je/nous/vous, which French agreement shows and the pronoun hides.
    singular_vous: whether vous addresses one person ("vous êtes étudiant").
    """

    subject: str | NounPhrase
    verb: str
    objects: tuple[NounPhrase, ...] = ()
    complement: str | None = None
    place: tuple[str, NounPhrase] | None = None
    negated: bool = False
    feminine: bool = False
    singular_vous: bool = False


def realize(clause: Clause) -> tuple[list[str], list[str]]:
    """Translate a clause: its French tokens (elided) and its English tokens."""
    _check_clause(clause)
    person, gender, plural = _subject_agreement(clause)
    french = _french_subject(clause.subject)
    english = _english_subject(clause.subject)
    conjugated = VERBS[clause.verb].french[person]
    french += ["ne", conjugated, "pas"] if clause.negated else [conjugated]
    english += _english_verb(clause.verb, person, clause.negated)
    if clause.complement is not None:
        french.append(_form(_complement_forms(clause.complement), gender, plural))
        english += _english_complement(clause.complement, plural)
    for position, obj in enumerate(clause.objects):
        if position > 0:
            french.append("et")
            english.append("and")
        french += french_noun_phrase(obj, negated_object=clause.negated)
        english += english_noun_phrase(obj)
    if clause.place is not None:
        preposition, phrase = clause.place
        french += [preposition, *french_noun_phrase(phrase)]
        english += [*PREPOSITIONS[preposition].split(), *english_noun_phrase(phrase)]
    return elide(french), english


def french_noun_phrase(phrase: NounPhrase, negated_object: bool = False) -> list[str]:
    """French tokens of a noun phrase before `elide`, which turns "le oiseau" into "l'oiseau".

    The indefinite article becomes "de" for the object of a negated verb ("pas de pomme")
    and before an adjective in the plural ("de grands chiens").
    """
    _check_noun_phrase(phrase)
    noun = NOUNS[phrase.noun]
    noun_word = noun.french[phrase.plural]
    words = []
    if phrase.before is not None:
        adjective = ADJECTIVES[phrase.before]
        word = _form(adjective.french, noun.gender, phrase.plural)
        masculine_singular = noun.gender == "m" and not phrase.plural
        if masculine_singular and adjective.before_vowel and starts_with_vowel(noun_word):
            word = adjective.before_vowel  # un bel oiseau, le vieil homme
        words.append(word)
    words.append(noun_word)
    if phrase.after is not None:
        words.append(_form(ADJECTIVES[phrase.after].french, noun.gender, phrase.plural))
    if phrase.det == "un" and (negated_object or (phrase.plural and phrase.before)):
        return ["de", *words]
    forms = DETERMINERS[phrase.det].french
    determiner = forms[2] if phrase.plural else forms[noun.gender == "f"]
    return [determiner, *words]


def english_noun_phrase(phrase: NounPhrase) -> list[str]:
    """English tokens of a noun phrase: both adjectives go before the noun."""
    _check_noun_phrase(phrase)
    adjectives = [ADJECTIVES[key].english for key in (phrase.before, phrase.after) if key]
    words = [*adjectives, NOUNS[phrase.noun].english[phrase.plural]]
    determiner = DETERMINERS[phrase.det].english[phrase.plural]
    if determiner == "a":
        determiner = indefinite_article(words[0])
    return [determiner, *words] if determiner else words


def elide(tokens: list[str]) -> list[str]:
    """Apply French elision and its cousins before a vowel: je -> j', le -> l', ce -> cet."""
    out = []
    for position, token in enumerate(tokens):
        following = tokens[position + 1] if position + 1 < len(tokens) else ""
        if token in _BEFORE_VOWEL and following and starts_with_vowel(following):
            token = _BEFORE_VOWEL[token]
        out.append(token)
    return out


def starts_with_vowel(french_word: str) -> bool:
    """Whether a French word starts with a vowel sound (mute h included: l'homme)."""
    return french_word[0] in _FRENCH_VOWELS or french_word in _MUTE_H


def indefinite_article(next_english_word: str) -> str:
    """Return "a" or "an" by the next English word (no lexicon word breaks the spelling rule)."""
    return "an" if next_english_word[0] in "aeiou" else "a"


def french_words() -> set[str]:
    """Every French token the grammar can produce, fixed phrases included."""
    persons = {pronoun.person for pronoun in PRONOUNS.values()} | {2, 5}  # 2, 5: noun subjects
    words = {*PRONOUNS, *PREPOSITIONS, "ne", "pas", "et", "de"}
    words |= {word for phrase in FIXED_PHRASES for word in phrase}
    words |= {word for det in DETERMINERS.values() for word in det.french}
    words |= {word for noun in NOUNS.values() for word in noun.french}
    words |= {word for adj in ADJECTIVES.values() for word in adj.french}
    words |= {adj.before_vowel for adj in ADJECTIVES.values() if adj.before_vowel}
    words |= {word for job in PROFESSIONS.values() for word in job.french}
    words |= {verb.french[person] for verb in VERBS.values() for person in persons}
    return words | {_BEFORE_VOWEL[word] for word in words if word in _BEFORE_VOWEL}


def english_words() -> set[str]:
    """Every English token the grammar can produce, fixed phrases included."""
    words = {"do", "does", "not", "am", "and", "an"}
    words |= {pronoun.english for pronoun in PRONOUNS.values()}
    words |= {word for det in DETERMINERS.values() for word in det.english if word}
    words |= {word for text in PREPOSITIONS.values() for word in text.split()}
    words |= {word for phrase in FIXED_PHRASES.values() for word in phrase}
    words |= {word for noun in NOUNS.values() for word in noun.english}
    words |= {adj.english for adj in ADJECTIVES.values()}
    words |= {word for job in PROFESSIONS.values() for word in job.english}
    words |= {word for verb in VERBS.values() for text in verb.english for word in text.split()}
    return words


def _form(forms: tuple[str, str, str, str], gender: str, plural: bool) -> str:
    """Pick the agreeing form from (m sg, f sg, m pl, f pl)."""
    return forms[2 * plural + (gender == "f")]


def _subject_agreement(clause: Clause) -> tuple[int, str, bool]:
    """Conjugation row, gender and number that the subject imposes."""
    if isinstance(clause.subject, NounPhrase):
        plural = clause.subject.plural
        return (5 if plural else 2), NOUNS[clause.subject.noun].gender, plural
    pronoun = PRONOUNS[clause.subject]
    gender = pronoun.gender or ("f" if clause.feminine else "m")
    plural = pronoun.plural if pronoun.plural is not None else not clause.singular_vous
    return pronoun.person, gender, plural


def _french_subject(subject: str | NounPhrase) -> list[str]:
    return french_noun_phrase(subject) if isinstance(subject, NounPhrase) else [subject]


def _english_subject(subject: str | NounPhrase) -> list[str]:
    if isinstance(subject, NounPhrase):
        return english_noun_phrase(subject)
    return [PRONOUNS[subject].english]


def _english_verb(verb: str, person: int, negated: bool) -> list[str]:
    """English verb group: "is not", "eats", "does not eat" (do-support), "listen to"."""
    base, third_person = VERBS[verb].english
    if verb == "être":
        be = "am" if person == 0 else third_person if person == 2 else base
        return [be, "not"] if negated else [be]
    if negated:
        return ["does" if person == 2 else "do", "not", *base.split()]
    return (third_person if person == 2 else base).split()


def _complement_forms(complement: str) -> tuple[str, str, str, str]:
    if complement in PROFESSIONS:
        return PROFESSIONS[complement].french
    return ADJECTIVES[complement].french


def _english_complement(complement: str, plural: bool) -> list[str]:
    """A predicate noun takes an article in English only: "je suis étudiant" -> "a student"."""
    if complement not in PROFESSIONS:
        return [ADJECTIVES[complement].english]
    noun = PROFESSIONS[complement].english[plural]
    return [noun] if plural else [indefinite_article(noun), noun]


def _check_noun_phrase(phrase: NounPhrase) -> None:
    if phrase.noun not in NOUNS or phrase.det not in DETERMINERS:
        raise ValueError(f"unknown noun or determiner in {phrase}")
    for key, before_noun in ((phrase.before, True), (phrase.after, False)):
        if key is None:
            continue
        if key not in ADJECTIVES or ADJECTIVES[key].before_noun != before_noun:
            raise ValueError(f"adjective {key!r} cannot stand there in {phrase}")


def _check_clause(clause: Clause) -> None:
    if not isinstance(clause.subject, NounPhrase) and clause.subject not in PRONOUNS:
        raise ValueError(f"unknown subject {clause.subject!r}")
    if clause.verb not in VERBS:
        raise ValueError(f"unknown verb {clause.verb!r}")
    takes = VERBS[clause.verb].objects
    count = len(clause.objects)
    if (takes == "none" and count) or (takes == "required" and not count) or count > 2:
        raise ValueError(f"{clause.verb!r} cannot take {count} objects")
    if clause.negated and count > 1:
        raise ValueError("a negated verb takes one object at most (no ni ... ni)")
    if (clause.complement is not None) != (clause.verb == "être"):
        raise ValueError("être, and only être, takes a complement")
    if clause.complement is not None and clause.complement not in PROFESSIONS:
        if clause.complement not in ADJECTIVES:
            raise ValueError(f"unknown complement {clause.complement!r}")
    if clause.place is not None and clause.place[0] not in PREPOSITIONS:
        raise ValueError(f"unknown preposition {clause.place[0]!r}")
