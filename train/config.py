"""The hyperparameters of `python -m train.toy_translate`: one frozen dataclass, with the
measured CPU defaults in `DEFAULTS` and the larger GPU ones in `GPU_DEFAULTS`."""

from dataclasses import dataclass, fields, replace
from functools import cached_property

from train.data import make_vocabularies


@dataclass(frozen=True)
class Config:
    """A model (encoder and decoder of `layers` layers each), its optimizer and its run.

    The learning rate follows NoamLR: lr_factor * d_model^-0.5 * min(step^-0.5,
    step * warmup^-1.5). `train_size` is the number of training sentences drawn.
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
    def from_dict(cls, data: dict) -> "Config":
        """Rebuild a Config written by `to_dict`."""
        return cls(**data)

    def updated(self, **changes) -> "Config":
        """A copy with the given fields changed; None values are ignored."""
        return replace(self, **{key: value for key, value in changes.items()
                                if value is not None})


DEFAULTS = Config()
GPU_DEFAULTS = Config(d_model=256, heads=8, layers=3, ff=1024, batch_size=128, steps=4000,
                      warmup=800, lr_factor=0.7, eval_every=500)
