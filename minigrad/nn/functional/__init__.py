"""minigrad.nn.functional: stateless layers and losses (PyTorch's torch.nn.functional).

    import minigrad.nn.functional as F
"""
from minigrad import suggest
from minigrad.nn.functional.activation import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from minigrad.nn.functional.attention import attention, causal_mask, scaled_dot_product_attention
from minigrad.nn.functional.binary_loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
)
from minigrad.nn.functional.divergence import kl_div
from minigrad.nn.functional.dropout import dropout
from minigrad.nn.functional.linear import linear
from minigrad.nn.functional.loss import cross_entropy, nll_loss
from minigrad.nn.functional.normalization import layer_norm
from minigrad.nn.functional.normalize import normalize
from minigrad.nn.functional.padding import pad
from minigrad.nn.functional.regression_loss import huber_loss, l1_loss, mse_loss, smooth_l1_loss
from minigrad.nn.functional.sparse import embedding, one_hot

__all__ = [
    "attention",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "causal_mask",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsigmoid",
    "mish",
    "mse_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softplus",
    "tanh",
]


def __getattr__(name: str):
    # reached only for names F lacks: say what minigrad has instead (minigrad/suggest.py)
    raise suggest.missing_attribute("module 'minigrad.nn.functional'", name,
                                    suggest.FUNCTIONAL_NEAR, globals())
