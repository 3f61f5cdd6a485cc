"""Embedding lookup as a Function. PyTorch's node for it is EmbeddingBackward0; the class is
EmbeddingFunction because nn.Embedding is the Module (the node still prints as PyTorch's)."""
from __future__ import annotations

from minigrad.autograd.function import Function
from minigrad.ops.indexing import IndexAdd


class EmbeddingFunction(Function):
    """out = weight[ids];  dweight = zeros with g scatter-added at the ids' rows, leaving
    out the positions whose id is padding_idx (that row's gradient stays zero)"""

    def forward(self, weight, ids, padding_idx=None):
        self.ids = ids
        self.padding_idx = padding_idx
        self.weight_shape = weight.shape
        return weight[ids]

    def backward(self, grad):
        if self.padding_idx is not None:
            is_padding = grad._wrap((self.ids == self.padding_idx)[..., None])
            grad = grad.masked_fill(is_padding, 0.0)
        return IndexAdd.apply(grad, index=self.ids, shape=self.weight_shape)
