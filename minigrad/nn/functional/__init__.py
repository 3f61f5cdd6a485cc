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
from minigrad.nn.functional.adaptive_pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
from minigrad.nn.functional.attention import attention, causal_mask, scaled_dot_product_attention
from minigrad.nn.functional.batch_norm import batch_norm
from minigrad.nn.functional.binary_loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
)
from minigrad.nn.functional.conv import conv1d, conv2d
from minigrad.nn.functional.divergence import kl_div
from minigrad.nn.functional.dropout import dropout
from minigrad.nn.functional.group_norm import group_norm
from minigrad.nn.functional.linear import linear
from minigrad.nn.functional.loss import cross_entropy, nll_loss
from minigrad.nn.functional.normalization import layer_norm
from minigrad.nn.functional.normalize import normalize
from minigrad.nn.functional.padding import pad
from minigrad.nn.functional.pooling import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from minigrad.nn.functional.regression_loss import huber_loss, l1_loss, mse_loss, smooth_l1_loss
from minigrad.nn.functional.rms_norm import rms_norm
from minigrad.nn.functional.sparse import embedding, one_hot

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "attention",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "causal_mask",
    "conv1d",
    "conv2d",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "group_norm",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsigmoid",
    "max_pool1d",
    "max_pool2d",
    "mish",
    "mse_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "rms_norm",
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
