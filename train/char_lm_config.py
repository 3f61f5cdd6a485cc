"""The hyperparameters of `python -m train.char_lm`: one frozen dataclass, checked field
by field when it is built (from the command line or from a checkpoint's header, so that
every RunConfig that exists is one a run can use), with measured defaults per model."""

from dataclasses import asdict, dataclass

from train.char_lm_model import MODEL_KINDS, ModelConfig
from train.config import POSITIVE, POSITIVE_INT, PROBABILITY, Rule, dataclass_from_dict

FIELD_RULES: dict[str, Rule] = {
    "embedding": POSITIVE_INT,
    "hidden": POSITIVE_INT,
    "layers": POSITIVE_INT,
    "heads": POSITIVE_INT,
    "feedforward": POSITIVE_INT,
    "dropout": PROBABILITY,
    "seq_len": POSITIVE_INT,
    "batch_size": POSITIVE_INT,
    "lr": POSITIVE,
    "clip": POSITIVE,
    "seed": Rule(int, 0, 2**32 - 1),
    "train_size": Rule(int, 2),
}


@dataclass(frozen=True)
class RunConfig:
    """A model and how it is trained: Adam(lr) on batches of batch_size windows of seq_len
    characters, each step's gradient clipped to a global norm of at most `clip`; `seed`
    draws the initial weights, the batch order and dropout; the first train_size
    characters of the training part are trained on (None: all of it). The model's fields
    are ModelConfig's."""

    model: str
    embedding: int
    hidden: int
    layers: int
    heads: int
    feedforward: int
    dropout: float
    tie_weights: bool
    seq_len: int
    batch_size: int
    lr: float
    clip: float
    seed: int
    train_size: int | None

    def __post_init__(self) -> None:
        if self.model not in MODEL_KINDS:
            raise ValueError(f"model: must be one of {', '.join(MODEL_KINDS)}, got "
                             f"{self.model!r}")
        for name, rule in FIELD_RULES.items():
            if name == "train_size" and self.train_size is None:
                continue
            try:
                rule.check(getattr(self, name))
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        if type(self.tie_weights) is not bool:
            raise ValueError(f"tie_weights: must be a bool, got {self.tie_weights!r}")
        if self.model == "transformer" and self.embedding % self.heads:
            raise ValueError(f"heads: the Transformer's embedding {self.embedding} is not "
                             f"divisible by heads {self.heads}")
        if self.tie_weights and self.model != "transformer" and self.hidden != self.embedding:
            raise ValueError(f"tie_weights: the output layer is the embedding, so hidden "
                             f"({self.hidden}) must equal embedding ({self.embedding})")

    @classmethod
    def from_dict(cls, values: dict) -> "RunConfig":
        """The config a checkpoint holds; ValueError if a field is missing, unknown or
        breaks its rule."""
        return dataclass_from_dict(cls, values)

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """The config in a line of words."""
        if self.model == "transformer":
            network = (f"{self.layers} layers of width {self.embedding}, {self.heads} heads, "
                       f"feed-forward {self.feedforward}")
        else:
            network = (f"{self.layers} layer{'s' * (self.layers > 1)} of {self.hidden}, "
                       f"embedding {self.embedding}")
        return (f"{self.model} ({network}{', tied' * self.tie_weights}, dropout "
                f"{self.dropout}); Adam lr {self.lr}, {self.batch_size} windows of "
                f"{self.seq_len} characters a step, gradient norm clipped at {self.clip}, "
                f"seed {self.seed}")

    def model_config(self, vocab_size: int) -> ModelConfig:
        return ModelConfig(self.model, vocab_size, self.embedding, self.hidden, self.layers,
                           self.heads, self.feedforward, self.seq_len, self.dropout,
                           self.tie_weights)


# per model: the fields a fresh run takes when no flag sets them (a model ignores the
# fields of the others: the recurrent ones heads and feedforward, the Transformer hidden)
_SHARED = {"hidden": 256, "heads": 4, "feedforward": 512, "dropout": 0.0,
           "tie_weights": False, "seq_len": 64, "batch_size": 32, "clip": 1.0, "seed": 0,
           "train_size": None}
DEFAULTS: dict[str, dict] = {
    "lstm": {**_SHARED, "embedding": 64, "layers": 1, "lr": 3e-3},
    "gru": {**_SHARED, "embedding": 64, "layers": 1, "lr": 3e-3},
    "transformer": {**_SHARED, "embedding": 128, "layers": 2, "lr": 2e-3},
}
# about 2.5 minutes of one core each: an LSTM epoch takes 37 s, a GRU's 31 s, a
# Transformer's 25 s (CPU time on the development machine)
DEFAULT_EPOCHS = {"lstm": 4, "gru": 4, "transformer": 5}
