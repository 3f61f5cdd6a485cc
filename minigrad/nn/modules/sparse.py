"""Embedding: a lookup table of vectors, one row per id."""
from __future__ import annotations

import numbers

from minigrad import creation
from minigrad.autograd import no_grad
from minigrad.nn import init
from minigrad.nn.functional.sparse import embedding
from minigrad.nn.modules.module import Module
from minigrad.nn.parameter import Parameter
from minigrad.tensor import Tensor


class Embedding(Module):
    """weight (num_embeddings, embedding_dim) ~ N(0, 1); the padding_idx row starts at 0
    and gets no gradient."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 device=None, dtype=None) -> None:
        super().__init__()
        num_embeddings = creation.as_size(num_embeddings, "Embedding", "num_embeddings")
        embedding_dim = creation.as_size(embedding_dim, "Embedding", "embedding_dim")
        if padding_idx is not None:
            if isinstance(padding_idx, bool) or not isinstance(padding_idx, numbers.Integral):
                raise TypeError(f"Embedding: padding_idx must be an integer or None, got "
                                f"{padding_idx!r}")
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for "
                                 f"{num_embeddings} embeddings")
            padding_idx = int(padding_idx) % num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = Parameter(creation.zeros(num_embeddings, embedding_dim, dtype=dtype,
                                               device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        padding = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"
