"""minigrad.nn.functional: stateless layers and losses (PyTorch's torch.nn.functional).

    import minigrad.nn.functional as F
"""
from minigrad import suggest
from minigrad.nn.functional.activation import gelu, log_softmax, relu, softmax
from minigrad.nn.functional.attention import attention, causal_mask, scaled_dot_product_attention
from minigrad.nn.functional.dropout import dropout
from minigrad.nn.functional.linear import linear
from minigrad.nn.functional.loss import cross_entropy, mse_loss, nll_loss
from minigrad.nn.functional.normalization import layer_norm
from minigrad.nn.functional.padding import pad
from minigrad.nn.functional.sparse import embedding, one_hot

__all__ = [
    "attention",
    "causal_mask",
    "cross_entropy",
    "dropout",
    "embedding",
    "gelu",
    "layer_norm",
    "linear",
    "log_softmax",
    "mse_loss",
    "nll_loss",
    "one_hot",
    "pad",
    "relu",
    "scaled_dot_product_attention",
    "softmax",
]


def __getattr__(name: str):
    # reached only for names F lacks: say what minigrad has instead (minigrad/suggest.py)
    raise suggest.missing_attribute("module 'minigrad.nn.functional'", name,
                                    suggest.FUNCTIONAL_NEAR, globals())
