"""The hyperparameters of `python -m train.toy_translate`: one frozen dataclass, with the
measured CPU defaults in `DEFAULTS` and the larger GPU ones in `GPU_DEFAULTS`.

Every field has a rule (`FIELD_RULES`) that both the command line and a checkpoint's
header are checked against, so a Config that exists is one a run can use."""

import math
from dataclasses import dataclass, fields, replace
from functools import cached_property

from train.data import MAX_TRAIN_SIZE, MIN_TRAIN_SIZE, make_vocabularies


@dataclass(frozen=True)
class Rule:
    """What one field must be: an integer, or a finite number, between `low` and `high`
    (None: unbounded), each bound included unless marked open."""

    kind: type  # int or float
    low: float
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def check(self, value) -> None:
        """Raise ValueError saying what `value` should be."""
        allowed = (int, float) if self.kind is float else int
        if isinstance(value, bool) or not isinstance(value, allowed) or not self._holds(value):
            raise ValueError(f"must be {self}, got {value!r}")

    def parse(self, text: str):
        """The value of a command-line string, checked."""
        try:
            value = self.kind(text)
        except ValueError:
            raise ValueError(f"must be {self}, got {text!r}") from None
        self.check(value)
        return value

    def _holds(self, value) -> bool:
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        if self.high is None:
            return above
        return above and (value < self.high if self.high_open else value <= self.high)

    def __str__(self) -> str:
        noun = "an integer" if self.kind is int else "a finite number"
        if self.high is None:
            return f"{noun} {'>' if self.low_open else '>='} {self.low}"
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"{noun} in {left}{self.low}, {self.high}{right}"


POSITIVE_INT = Rule(int, 1)
PROBABILITY = Rule(float, 0.0, 1.0, high_open=True)  # a dropout or smoothing rate
POSITIVE = Rule(float, 0.0, low_open=True)  # a rate or a factor
FIELD_RULES: dict[str, Rule] = {
    "d_model": POSITIVE_INT,
    "heads": POSITIVE_INT,
    "layers": POSITIVE_INT,
    "ff": POSITIVE_INT,
    "dropout": PROBABILITY,
    "batch_size": POSITIVE_INT,
    "steps": POSITIVE_INT,
    "warmup": POSITIVE_INT,
    "lr_factor": POSITIVE,
    "label_smoothing": PROBABILITY,
    "seed": Rule(int, 0, 2**64 - 1),
    "train_size": Rule(int, MIN_TRAIN_SIZE, MAX_TRAIN_SIZE),
    "eval_every": POSITIVE_INT,
}


def dataclass_from_dict(cls, data):
    """cls(**data) for a dict with exactly the fields of the dataclass cls, which checks
    each value; ValueError naming the fields for anything else (a checkpoint's config)."""
    names = {field.name for field in fields(cls)}
    if not isinstance(data, dict) or set(data) != names:
        found = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"a config must have exactly the fields {sorted(names)}, got {found}")
    return cls(**data)


@dataclass(frozen=True)
class Config:
    """A model (encoder and decoder of `layers` layers each), its optimizer and its run.

    The learning rate follows NoamLR: lr_factor * d_model^-0.5 * min(step^-0.5,
    step * warmup^-1.5). `train_size` is the number of training sentences drawn.
    Building one with a value its rule refuses raises ValueError naming the field.
    """

    d_model: int = 64
    heads: int = 4
    layers: int = 2
    ff: int = 256
    dropout: float = 0.1
    batch_size: int = 128
    steps: int = 1500
    warmup: int = 250
    lr_factor: float = 0.5
    label_smoothing: float = 0.1
    seed: int = 0
    train_size: int = 20_000
    eval_every: int = 250

    def __post_init__(self) -> None:
        for field in fields(self):
            try:
                FIELD_RULES[field.name].check(getattr(self, field.name))
            except ValueError as exc:
                raise ValueError(f"{field.name} {exc}") from None
        if self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by heads "
                             f"({self.heads})")

    @cached_property
    def vocab_estimate(self) -> int:
        """The size of the larger vocabulary (French), for benchmarks."""
        return max(len(vocab) for vocab in make_vocabularies())

    @property
    def length_estimate(self) -> int:
        """A typical padded batch length: length-bucketed batches pad to about 7 tokens."""
        return 8

    def to_dict(self) -> dict:
        """The fields as a JSON-able dict, for a checkpoint."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def from_dict(cls, data) -> "Config":
        """Rebuild a Config written by `to_dict`; ValueError for anything else."""
        return dataclass_from_dict(cls, data)

    def updated(self, **changes) -> "Config":
        """A copy with the given fields changed; None values are ignored."""
        return replace(self, **{key: value for key, value in changes.items()
                                if value is not None})


DEFAULTS = Config()
GPU_DEFAULTS = Config(d_model=256, heads=8, layers=3, ff=1024, batch_size=128, steps=4000,
                      warmup=800, lr_factor=0.7, eval_every=500)
