"""A vocabulary: the mapping between tokens and ids, special tokens first."""

from collections.abc import Iterable, Sequence

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(len(SPECIALS))


class Vocab:
    """Token ids: <pad>=0, <s>=1, </s>=2, <unk>=3, then the words in the order given.

    >>> vocab = Vocab(["chat", "chien"])
    >>> vocab.encode(["chien", "loup"])
    [5, 3]
    >>> vocab.decode([1, 5, 2, 4])
    ['chien']
    """

    def __init__(self, words: Iterable[str]) -> None:
        words = list(words)
        if len(set(words)) != len(words) or set(words) & set(SPECIALS):
            raise ValueError("vocabulary words must be unique and not special tokens")
        self.tokens = [*SPECIALS, *words]
        self._ids = {token: index for index, token in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._ids

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.tokens == other.tokens

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens)"

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Ids of the tokens; a token outside the vocabulary becomes <unk>."""
        return [self._ids.get(token, UNK_ID) for token in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of the ids up to the first </s>, without <pad> and <s>."""
        tokens = []
        for index in map(int, ids):  # accepts numpy integers
            if index == EOS_ID:
                break
            if index not in (PAD_ID, BOS_ID):
                tokens.append(self.tokens[index])
        return tokens

    def unknown_words(self, tokens: Iterable[str]) -> list[str]:
        """The tokens that are not words of this vocabulary, once each, in order of appearance."""
        unknown = []
        for token in tokens:
            if (token not in self._ids or token in SPECIALS) and token not in unknown:
                unknown.append(token)
        return unknown

    def to_dict(self) -> dict[str, list[str]]:
        """A JSON-able description, for a checkpoint header."""
        return {"tokens": list(self.tokens)}

    @classmethod
    def from_dict(cls, data: dict[str, list[str]]) -> "Vocab":
        """Rebuild a vocabulary written by `to_dict`; ValueError for anything else."""
        if not isinstance(data, dict) or set(data) != {"tokens"}:
            raise ValueError(f"a vocabulary is a dict with the one entry 'tokens', got "
                             f"{str(data)[:80]}")
        tokens = data["tokens"]
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ValueError("a vocabulary's tokens must be a list of strings")
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}, got {tokens[:4]}")
        return cls(tokens[len(SPECIALS) :])
