"""Embedding lookup: rows of a weight matrix picked by integer ids."""
from __future__ import annotations

from minigrad.ops.embedding import EmbeddingFunction
from minigrad.ops.operands import check_same_device
from minigrad.tensor import Tensor, constant


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:  # noqa: A002
    """weight[input] for integer ids `input` of any shape -> shape input.shape + (dim,)."""
    if input.dtype.is_floating_point:
        raise TypeError(
            f"embedding: expected integer ids, got {input.dtype} of shape {tuple(input.shape)}"
        )
    check_same_device("embedding", weight, ids=input)
    num_embeddings = weight.shape[0]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num_embeddings
    ids = input.array
    if ids.size and (ids.min() < 0 or ids.max() >= num_embeddings):
        raise IndexError(
            f"embedding: ids must be in [0, {num_embeddings}), got values in "
            f"[{int(ids.min())}, {int(ids.max())}] (ids shape {tuple(input.shape)})"
        )
    return EmbeddingFunction.apply(weight, ids=ids, padding_idx=padding_idx)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 tensor of shape tensor.shape + (num_classes,) with a 1 at each class index
    and 0 elsewhere; num_classes=-1 means the largest index + 1."""
    if tensor.dtype.name != "int64":
        raise TypeError(f"one_hot: expected an int64 tensor of class indices, got "
                        f"{tensor.dtype} of shape {tuple(tensor.shape)}")
    xp = tensor.xp
    classes = tensor.array
    if num_classes == -1:
        if classes.size == 0:
            raise RuntimeError("one_hot: cannot infer num_classes from an empty tensor; pass "
                               "num_classes")
        num_classes = int(classes.max()) + 1
    if classes.size and (int(classes.min()) < 0 or int(classes.max()) >= num_classes):
        raise RuntimeError(
            f"one_hot: class indices must be in [0, {num_classes}), got values in "
            f"[{int(classes.min())}, {int(classes.max())}] (shape {tuple(tensor.shape)})"
        )
    return constant((classes[..., None] == xp.arange(num_classes)).astype(xp.int64))
