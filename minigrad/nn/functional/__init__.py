"""minigrad.nn.functional: stateless layers and losses (PyTorch's torch.nn.functional).

    import minigrad.nn.functional as F
"""
from minigrad.nn.functional.activation import gelu, log_softmax, relu, softmax
from minigrad.nn.functional.adaptive_pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
from minigrad.nn.functional.attention import attention, causal_mask, scaled_dot_product_attention
from minigrad.nn.functional.batch_norm import batch_norm
from minigrad.nn.functional.conv import conv1d, conv2d
from minigrad.nn.functional.dropout import dropout
from minigrad.nn.functional.group_norm import group_norm
from minigrad.nn.functional.linear import linear
from minigrad.nn.functional.loss import cross_entropy, mse_loss, nll_loss
from minigrad.nn.functional.normalization import layer_norm
from minigrad.nn.functional.pooling import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from minigrad.nn.functional.rms_norm import rms_norm
from minigrad.nn.functional.sparse import embedding

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "attention",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "causal_mask",
    "conv1d",
    "conv2d",
    "cross_entropy",
    "dropout",
    "embedding",
    "gelu",
    "group_norm",
    "layer_norm",
    "linear",
    "log_softmax",
    "max_pool1d",
    "max_pool2d",
    "mse_loss",
    "nll_loss",
    "relu",
    "rms_norm",
    "scaled_dot_product_attention",
    "softmax",
]
